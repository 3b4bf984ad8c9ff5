// `rowgate db verify`: invariants the data must always hold, whatever requests ran at once
// (SPEC §21) and whatever an operator did by hand. Each finding names one row: the table,
// its id and what is wrong with it. The property test of test/props/between-rules.ts asks
// the same query after every step, so the command and the test read one definition.
import type pg from 'pg';

export interface Violation {
  table: string;
  id: string;
  /** the organization the row belongs to (null for a row that names none) */
  organization_id: string | null;
  problem: string;
}

/**
 * One select a rule, joined by `union all`; `$1` limits every rule to some organizations
 * (null: all). A live membership is one whose row and user are not deleted.
 */
const VERIFY = `
with live_members as (
  select m.* from rowgate.memberships m join rowgate.users u on u.id = m.user_id
  where m.deleted_at is null and u.deleted_at is null and ($1::uuid[] is null or m.organization_id = any($1))
)
-- SPEC §21: an organization always keeps an admin while it has members
select 'organizations' as table, o.id::text as id, o.id as organization_id,
  'has ' || count(*) || ' live member(s) and no admin' as problem
from rowgate.organizations o join live_members m on m.organization_id = o.id
where o.deleted_at is null
group by o.id having not bool_or(m.role = 'admin')
union all
-- SPEC §21: a membership's role names a built-in role or one of its organization's roles
select 'memberships', m.id::text, m.organization_id, 'role ' || quote_literal(m.role) || ' is neither built in nor a role of its organization'
from live_members m
where not exists (select 1 from rowgate.roles r where r.name = m.role)
  and not exists (select 1 from rowgate.organization_roles r
                  where r.organization_id = m.organization_id and r.name = m.role and r.deleted_at is null)
union all
-- the same for what a pending invitation will grant when accepted
select 'invitations', i.id::text, i.organization_id, 'pending with role ' || quote_literal(i.role) || ', neither built in nor a role of its organization'
from rowgate.invitations i
where i.status = 'pending' and i.expires_at > now() and ($1::uuid[] is null or i.organization_id = any($1))
  and not exists (select 1 from rowgate.roles r where r.name = i.role)
  and not exists (select 1 from rowgate.organization_roles r
                  where r.organization_id = i.organization_id and r.name = i.role and r.deleted_at is null)
union all
-- SPEC §2: a deleted user reaches nothing, so deleting it ends its memberships
select 'memberships', m.id::text, m.organization_id, 'is live but its user ' || m.user_id || ' is deleted'
from rowgate.memberships m join rowgate.users u on u.id = m.user_id
where m.deleted_at is null and u.deleted_at is not null and ($1::uuid[] is null or m.organization_id = any($1))
union all
-- an organization's role grants only permissions of SPEC §5's set (rowgate.permissions)
select 'organization_roles', r.id::text, r.organization_id, 'grants unknown permission(s) ' || array_to_string(array(
    select p from unnest(r.permissions) p where not exists (select 1 from rowgate.permissions k where k.name = p)), ', ')
from rowgate.organization_roles r
where r.deleted_at is null and ($1::uuid[] is null or r.organization_id = any($1))
  and exists (select 1 from unnest(r.permissions) p where not exists (select 1 from rowgate.permissions k where k.name = p))
union all
-- events are partitioned, so no foreign key ties them to their organization: every event names one
select 'events', e.id::text, e.organization_id, 'names organization ' || e.organization_id || ', which does not exist'
from rowgate.events e
where ($1::uuid[] is null or e.organization_id = any($1))
  and not exists (select 1 from rowgate.organizations o where o.id = e.organization_id)
union all
-- an event's client address and user agent belong to an event (SPEC §21's audit fields)
select 'event_clients', c.event_id::text, c.organization_id, 'belongs to no event'
from rowgate.event_clients c
where ($1::uuid[] is null or c.organization_id = any($1))
  and not exists (select 1 from rowgate.events e where e.organization_id = c.organization_id and e.id = c.event_id)
order by 1, 3, 2`;

/** Every violation, or those of some organizations; an empty list when the data is sound. */
export async function verifyData(db: pg.ClientBase | pg.Pool, organizationIds?: string[]): Promise<Violation[]> {
  return (await db.query<Violation>(VERIFY, [organizationIds ?? null])).rows;
}

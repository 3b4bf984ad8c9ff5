--! Previous: sha1:658c191fa464d5a85ca9dad6fb6dcae947c37433
--! Hash: sha1:03069f61046cc4908dc92100e76ea9cd859229aa
--! Message: The request log's reach probed by index, a row at a time

--! split: 001-request-log-reach-probed-by-index.sql
-- A batch of the request log checks each row's reach by index: the subject's live membership and
-- its organization, its user and its token, probed once a row. A membership check the planner
-- may hash reads every membership of every organization on each batch, and a join on users reads
-- every user: their cost grows with the deployment, not with the batch. A lock waited for past
-- 2 s fails the migration, which is run again.
set local lock_timeout = '2s';

create or replace function rowgate_private.record_requests(p_rows jsonb) returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_written integer;
begin
  insert into rowgate.request_log (id, organization_id, request_id, method, route, path, status, error, duration_ms,
      credential_kind, credential_id, user_id, client_ip, user_agent, api_version, idempotent_replayed, created_at)
    select r.id, p.organization_id, left(r.request_id, 128), left(r.method, 10), left(r.route, 200), left(r.path, 2000),
      r.status, left(r.error, 100), greatest(r.duration_ms, 0), r.credential_kind, r.credential_id,
      case when r.subject_kind = 'user' then r.subject_id end,
      case when p.gone is not true then r.client_ip end,
      case when p.gone is not true then left(r.user_agent, 256) end,
      r.api_version, coalesce(r.idempotent_replayed, false), r.created_at
    from jsonb_to_recordset(p_rows) as r(id uuid, organization_id uuid, subject_kind text, subject_id uuid, request_id text,
        method text, route text, path text, status integer, error text, duration_ms integer, credential_kind text,
        credential_id uuid, client_ip inet, user_agent text, api_version text, idempotent_replayed boolean, created_at timestamptz)
      -- a refusal whose organization the server did not learn: the one its denial was recorded in; and
      -- whether its user is deleted (offset 0 keeps each one lookup a row, not one for each place it is
      -- used, and keeps the planner from turning the user's into a join over every user)
      cross join lateral (select coalesce(r.organization_id, (select d.organization_id from rowgate.denials d
          where d.request_log_id = r.id limit 1)) as organization_id,
        (select u.deleted_at is not null from rowgate.users u where r.subject_kind = 'user' and u.id = r.subject_id) as gone
        offset 0) p
    where p.organization_id is not null and r.id is not null
      and case r.subject_kind
        when 'organization' then p.organization_id = r.subject_id
        -- limit 1: a probe of the membership index a row, never a hashed read of all memberships
        when 'user' then coalesce((select true from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
            where m.user_id = r.subject_id and m.organization_id = p.organization_id
              and m.deleted_at is null and o.deleted_at is null limit 1), false)
          and (r.credential_kind is distinct from 'personal_access_token' or coalesce((select true from rowgate.personal_access_tokens t
            where t.id = r.credential_id
              and (t.organization_ids is null or p.organization_id = any (t.organization_ids)) limit 1), false))
        else false end
    on conflict do nothing;
  get diagnostics v_written = row_count;
  return v_written;
end;
$$;

--! Previous: sha1:5d0b81ce5c760f3ac04129b04a0f0fefb1921a51
--! Hash: sha1:5c7b9b33346ba21781ec4fb8d5e1f641cd7d2a81
--! Message: Read replicas: on a hot standby, authentication only checks whether a token's use is due to be recorded, and asks for the primary when it is

-- Issue 18 (SPEC §19): reads may be served by a hot standby, where nothing can
-- be written, not even a row lock. Authentication records a token's use
-- (last_used_at, at most once a minute) with an UPDATE that fails there on
-- every request, so no PAT or OAT could read from a standby. On a standby the
-- record is now only checked: when it is due, authentication fails with
-- read_only_sql_transaction (25006) and the server runs the request again on
-- the primary (src/db/read-replicas.ts), which records it; within the minute
-- the standby serves the token's reads. last_used_at means what it meant.
create or replace function rowgate_private.record_token_use(p_kind text, p_token_hash bytea) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if pg_is_in_recovery() then
    if exists (
        select 1 from rowgate_private.access_token_hashes h
          left join rowgate.personal_access_tokens p on p_kind = 'personal_access_token' and p.id = h.personal_access_token_id
          left join rowgate.organization_access_tokens o
            on p_kind = 'organization_access_token' and o.id = h.organization_access_token_id
        where h.token_hash = p_token_hash
          and coalesce(p.id, o.id) is not null
          and coalesce(p.last_used_at, o.last_used_at, '-infinity') < now() - interval '1 minute') then
      raise exception 'The use of this token is recorded on the primary' using errcode = 'read_only_sql_transaction';
    end if;
    return;
  end if;
  if p_kind = 'personal_access_token' then
    update rowgate.personal_access_tokens set last_used_at = now()
      where id = (select t.id from rowgate_private.access_token_hashes h
          join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        where h.token_hash = p_token_hash
          and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
        for no key update of t skip locked);
  elsif p_kind = 'organization_access_token' then
    update rowgate.organization_access_tokens set last_used_at = now()
      where id = (select t.id from rowgate_private.access_token_hashes h
          join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        where h.token_hash = p_token_hash
          and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
        for no key update of t skip locked);
  end if;
end;
$$;

-- Streamed exports (SPEC §24) run at most 2 at once per credential, across every server:
-- each running export holds a lease row here, renewed with each chunk it reads, so a
-- server that dies mid-export frees its slot when the lease runs out. Only the functions
-- below touch it, as the credential of the transaction that calls them.
create table rowgate_private.export_leases (
  id uuid default gen_random_uuid() not null primary key,
  credential_id uuid not null,
  expires_at timestamptz not null,
  created_at timestamptz default now() not null
);
create index export_leases_credential on rowgate_private.export_leases (credential_id, expires_at);

create function rowgate_hidden.claim_export(p_per_credential integer, p_lease_seconds integer)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_credential uuid := rowgate_hidden.current_credential_id();
  v_id uuid;
begin
  if v_credential is null then
    raise exception 'An export needs a credential' using errcode = 'RG403';
  end if;
  -- one credential's claims one at a time, so two at once cannot both take the last slot
  perform pg_advisory_xact_lock(hashtextextended('rowgate exports ' || v_credential::text, 0));
  delete from rowgate_private.export_leases l where l.credential_id = v_credential and l.expires_at <= now();
  if (select count(*) from rowgate_private.export_leases l where l.credential_id = v_credential) >= p_per_credential then
    raise exception 'At most % exports run at once per credential', p_per_credential using errcode = 'RG429', detail = '1';
  end if;
  insert into rowgate_private.export_leases (credential_id, expires_at)
    values (v_credential, now() + make_interval(secs => p_lease_seconds))
    returning id into v_id;
  return v_id;
end;
$$;
comment on function rowgate_hidden.claim_export(integer, integer) is 'Takes one of the credential''s export slots (SPEC §24) for p_lease_seconds, or refuses (RG429) when it holds p_per_credential already.';

create function rowgate_hidden.renew_export(p_id uuid, p_lease_seconds integer)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update rowgate_private.export_leases l set expires_at = now() + make_interval(secs => p_lease_seconds)
    where l.id = p_id and l.credential_id = rowgate_hidden.current_credential_id();
end;
$$;
comment on function rowgate_hidden.renew_export(uuid, integer) is 'Keeps the credential''s export slot p_id for p_lease_seconds more.';

create function rowgate_hidden.end_export(p_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  delete from rowgate_private.export_leases l where l.id = p_id and l.credential_id = rowgate_hidden.current_credential_id();
end;
$$;
comment on function rowgate_hidden.end_export(uuid) is 'Gives the credential''s export slot p_id back.';

grant execute on function rowgate_hidden.claim_export(integer, integer), rowgate_hidden.renew_export(uuid, integer),
  rowgate_hidden.end_export(uuid) to rowgate_user, rowgate_organization;

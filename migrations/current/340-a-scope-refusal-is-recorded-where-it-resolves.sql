-- A scope refusal is kept in the denial log too (SPEC §20), so a manager sees a token failing
-- for lack of a scope. The request answers 403 before resolving anything (SPEC §5); the API then
-- hands the refusal here with step `scope`, and its resource or organization_id is resolved as
-- if the credential held the operation's scopes, only to find the organization to record it in:
-- still only one the subject reaches, within the same cap.
create or replace function rowgate_private.record_denial(p_subject_kind text, p_subject_id uuid, p_credential_kind text, p_credential_id uuid, p_scopes text, p_request_id text, p_operation text, p_params jsonb, p_organization_id uuid, p_named_organization_id uuid, p_step text, p_error text, p_reason text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_saved text[] := array[current_setting('rowgate.subject_kind', true), current_setting('rowgate.subject_id', true),
    current_setting('rowgate.credential_kind', true), current_setting('rowgate.scopes', true)];
  v_organization_id uuid := p_organization_id;
  v_reached boolean;
  v_credential_id uuid := coalesce(p_credential_id, p_subject_id);
  v_recorded integer;
  v_overflow_id uuid;
begin
  if p_subject_kind is null or p_subject_id is null or p_credential_kind is null then
    return false;
  end if;
  -- a scope refusal answered before anything was resolved (SPEC §5): its resource is resolved here, only to
  -- record it, as if the credential held the operation's scopes; the reach below is still the subject's
  perform set_config('rowgate.subject_kind', p_subject_kind, true), set_config('rowgate.subject_id', p_subject_id::text, true),
    set_config('rowgate.credential_kind', p_credential_kind, true),
    set_config('rowgate.scopes', concat_ws(' ', nullif(p_scopes, ''), case when p_step = 'scope' then
      (select nullif(array_to_string(o.scopes, ' '), '') from rowgate_hidden.operations o where o.operation = p_operation) end), true);
  if v_organization_id is null and p_operation is not null then
    begin
      v_organization_id := (rowgate_hidden.check_operation(p_operation, coalesce(p_params, '{}'), p_named_organization_id)
        ->> 'organization_id')::uuid;
    exception when others then
      v_organization_id := null;
    end;
  end if;
  v_reached := v_organization_id is not null and v_organization_id = any (rowgate_hidden.current_organization_ids());
  perform rowgate_hidden.restore_subject(v_saved);
  if not v_reached then
    return false;
  end if;

  insert into rowgate_private.denial_counts as c (organization_id, credential_id, hour, recorded)
    values (v_organization_id, v_credential_id, date_trunc('hour', now()), 1)
    on conflict (organization_id, credential_id, hour) do update set recorded = c.recorded + 1
    returning c.recorded, c.overflow_id into v_recorded, v_overflow_id;
  if v_recorded <= 1000 then
    insert into rowgate.denials (organization_id, request_id, operation, credential_kind, credential_id, user_id, step, error, reason)
      values (v_organization_id, nullif(p_request_id, ''), p_operation, p_credential_kind, p_credential_id,
        case when p_subject_kind = 'user' then p_subject_id end, p_step, p_error, p_reason);
  elsif v_overflow_id is null then
    insert into rowgate.denials (organization_id, credential_kind, credential_id, user_id)
      values (v_organization_id, p_credential_kind, p_credential_id, case when p_subject_kind = 'user' then p_subject_id end)
      returning id into v_overflow_id;
    update rowgate_private.denial_counts c set overflow_id = v_overflow_id
      where c.organization_id = v_organization_id and c.credential_id = v_credential_id and c.hour = date_trunc('hour', now());
  else
    update rowgate.denials d set count = d.count + 1 where d.organization_id = v_organization_id and d.id = v_overflow_id;
  end if;
  return true;
end;
$function$;
comment on function rowgate_private.record_denial(text,uuid,text,uuid,text,text,text,jsonb,uuid,uuid,text,text,text) is 'Keeps a 403 answer (SPEC §20) in the organization it concerns (for a scope refusal, the one its resource or organization_id resolves to), if the subject reaches it, within the cap of 1,000 rows per credential, organization and hour; the API calls it after the request rolled back.';
grant execute on function rowgate_private.record_denial(text,uuid,text,uuid,text,text,text,jsonb,uuid,uuid,text,text,text) to rowgate_authenticator;

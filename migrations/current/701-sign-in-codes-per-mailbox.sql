-- One e-mail address receives at most 10 sign-in codes an hour from requests of unknown origin,
-- however many clients ask (SPEC §14); a request past that still answers alike and mails
-- nothing. The owner's own browser (the signed `rowgate_device` cookie set at each sign-in) and
-- each client network that signed in to the account in the last 30 days (IPv4 /24, IPv6 /64)
-- have 10 an hour of their own, which no other request spends: an attacker fills the inbox no
-- faster than that and never stops the owner's codes. Where an account signed in from is kept
-- here, written only by a successful sign-in.
create table rowgate_private.sign_in_devices (
  email text not null,
  device_hash bytea not null,
  signed_in_at timestamptz not null default now(),
  constraint sign_in_devices_pkey primary key (email, device_hash)
);
comment on table rowgate_private.sign_in_devices is 'Browsers that signed in to an address (the keyed hash of their rowgate_device cookie), kept a year after their latest sign-in.';
create index sign_in_devices_signed_in_at on rowgate_private.sign_in_devices (signed_in_at);

create table rowgate_private.sign_in_networks (
  email text not null,
  network cidr not null,
  signed_in_at timestamptz not null default now(),
  constraint sign_in_networks_pkey primary key (email, network)
);
comment on table rowgate_private.sign_in_networks is 'Client networks (IPv4 /24, IPv6 /64) that signed in to an address, kept 30 days after their latest sign-in.';
create index sign_in_networks_signed_in_at on rowgate_private.sign_in_networks (signed_in_at);

alter table rowgate_private.login_codes
  add column origin text not null default 'unknown',
  add column mailed boolean not null default true;
-- Holds for every code written from now on; the codes before have origin 'unknown' (the column's
-- default), so they are not scanned for.
alter table rowgate_private.login_codes add constraint login_codes_origin_check check (length(origin) <= 80) not valid;
comment on column rowgate_private.login_codes.origin is 'Whose mailbox allowance the code spent: unknown, device:<its hash> or network:<cidr>.';
comment on column rowgate_private.login_codes.mailed is 'False when the mailbox allowance of its origin was spent: the code was stored (the client''s allowance paid for it) but never mailed.';

create function rowgate_private.mailbox_codes_per_hour()
returns integer
language sql
immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$ select 10 $$;
comment on function rowgate_private.mailbox_codes_per_hour() is 'Sign-in codes one address receives an hour from one origin (unknown, one device, one recent network).';

create function rowgate_private.client_network(p_client text)
returns cidr
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_address inet;
begin
  v_address := p_client::inet;
  return network(set_masklen(v_address, case when family(v_address) = 4 then 24 else 64 end))::cidr;
exception when invalid_text_representation then
  -- a client that is no IP address (a socket already closed) is of no network
  return null;
end;
$$;
comment on function rowgate_private.client_network(text) is 'The network a client address belongs to for sign-in origins: its IPv4 /24 or IPv6 /64; null for what is no address.';

-- request_login_code gains the device cookie's hash and decides whose mailbox allowance a code
-- spends (and whether it is mailed); its result gains `mail`
drop function rowgate.request_login_code(text, bytea, bytea, text);
create function rowgate.request_login_code(p_email text, p_code_hash bytea, p_attempt_hash bytea, p_client text, p_device_hash bytea)
returns table (status text, expires_in integer, retry_after integer, mail boolean)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_email text := lower(p_email);
  v_lifetime interval := rowgate_private.login_code_lifetime();
  v_network cidr := rowgate_private.client_network(p_client);
  v_for_address timestamptz;
  v_in_all timestamptz;
  v_origin text;
  v_mail boolean;
begin
  -- two requests of one client at once are counted one after the other
  perform pg_advisory_xact_lock(hashtextextended('rowgate.login_code:' || p_client, 0));
  delete from rowgate_private.login_codes c where c.created_at < now() - interval '1 day';
  -- the fifth newest code for this address and the twentieth newest in all, within the hour
  select c.created_at into v_for_address from rowgate_private.login_codes c
    where c.client = p_client and c.email = v_email and c.created_at > now() - interval '1 hour'
    order by c.created_at desc offset 4 limit 1;
  select c.created_at into v_in_all from rowgate_private.login_codes c
    where c.client = p_client and c.created_at > now() - interval '1 hour'
    order by c.created_at desc offset 19 limit 1;
  if v_for_address is not null or v_in_all is not null then
    return query select 'rate_limited'::text, null::integer,
      greatest(1, ceil(extract(epoch from
        greatest(v_for_address, v_in_all) + interval '1 hour' - now())))::integer, false;
    return;
  end if;
  -- whose mailbox allowance: the account's own browser, else a network it signed in from lately, else unknown
  v_origin := case
    when p_device_hash is not null and exists (
      select from rowgate_private.sign_in_devices d
      where d.email = v_email and d.device_hash = p_device_hash and d.signed_in_at > now() - interval '1 year')
      then 'device:' || encode(p_device_hash, 'hex')
    when v_network is not null and exists (
      select from rowgate_private.sign_in_networks n
      where n.email = v_email and n.network = v_network and n.signed_in_at > now() - interval '30 days')
      then 'network:' || v_network::text
    else 'unknown'
  end;
  -- requests of one origin from many clients at once are counted one after the other
  perform pg_advisory_xact_lock(hashtextextended('rowgate.mailbox:' || v_email || ':' || v_origin, 0));
  v_mail := (select count(*) from rowgate_private.login_codes c
    where c.email = v_email and c.origin = v_origin and c.mailed and c.created_at > now() - interval '1 hour')
    < rowgate_private.mailbox_codes_per_hour();
  insert into rowgate_private.login_codes (email, code_hash, attempt_hash, client, expires_at, origin, mailed)
    values (v_email, p_code_hash, p_attempt_hash, p_client, now() + v_lifetime, v_origin, v_mail);
  return query select 'created'::text, extract(epoch from v_lifetime)::integer, null::integer, v_mail;
end;
$$;
comment on function rowgate.request_login_code(text, bytea, bytea, text, bytea) is '@behavior -*
Stores a login code''s hash for an address and the attempt that asked: created with the seconds it stays valid and whether to mail it (10 an hour per address and origin: unknown, the device cookie''s browser, a network that signed in lately), or rate_limited (5 codes an hour per client and address, 20 per client) with the seconds until the client may ask again.';
grant execute on function rowgate.request_login_code(text, bytea, bytea, text, bytea) to rowgate_anonymous;

-- authenticate_login_code gains the client and the device cookie's hash: a sign-in records the
-- browser and the network it came from, whose requests then have their own mailbox allowance
drop function rowgate.authenticate_login_code(text, bytea, bytea, bytea);
create function rowgate.authenticate_login_code(p_email text, p_code_hash bytea, p_attempt_hash bytea, p_session_token_hash bytea, p_client text, p_device_hash bytea)
returns table (status text, id uuid, email text, name text, avatar_url text, is_admin boolean, created_at timestamptz, updated_at timestamptz, session_expires_at timestamptz)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_email text := lower(p_email);
  v_code rowgate_private.login_codes;
  v_user rowgate.users;
  v_session rowgate_private.sessions;
  v_network cidr := rowgate_private.client_network(p_client);
begin
  -- the attempt's guesses are counted one after the other, from wherever they come
  select c.* into v_code from rowgate_private.login_codes c where c.attempt_hash = p_attempt_hash for update;
  if v_code.id is null or v_code.used_at is not null or v_code.expires_at <= now()
     or v_code.wrong_codes >= rowgate_private.login_code_wrong_codes_allowed() then
    return query select 'invalid'::text, null::uuid, null::text, null::text, null::text, null::boolean,
      null::timestamptz, null::timestamptz, null::timestamptz;
    return;
  end if;
  if v_code.email <> v_email or v_code.code_hash <> p_code_hash then
    update rowgate_private.login_codes c set wrong_codes = c.wrong_codes + 1 where c.id = v_code.id;
    return query select 'invalid'::text, null::uuid, null::text, null::text, null::text, null::boolean,
      null::timestamptz, null::timestamptz, null::timestamptz;
    return;
  end if;
  -- a code signs in once, and the other codes of the address die with it
  update rowgate_private.login_codes c set used_at = now() where c.email = v_email and c.used_at is null;
  select u.* into v_user from rowgate.users u where u.email = v_email and u.deleted_at is null;
  if v_user.id is null then
    insert into rowgate.users (email) values (v_email) returning * into v_user;
  end if;
  v_session := rowgate_private.issue_web_session(v_user.id, p_session_token_hash);
  -- where the owner signs in from: its later requests from there have their own mailbox allowance
  delete from rowgate_private.sign_in_devices d where d.signed_in_at < now() - interval '1 year';
  delete from rowgate_private.sign_in_networks n where n.signed_in_at < now() - interval '30 days';
  if p_device_hash is not null then
    insert into rowgate_private.sign_in_devices as d (email, device_hash) values (v_email, p_device_hash)
      on conflict (email, device_hash) do update set signed_in_at = now();
  end if;
  if v_network is not null then
    insert into rowgate_private.sign_in_networks as n (email, network) values (v_email, v_network)
      on conflict (email, network) do update set signed_in_at = now();
  end if;
  return query select 'ok'::text, v_user.id, v_user.email, v_user.name, v_user.avatar_url,
    exists (select 1 from rowgate_private.platform_admins a where a.user_id = v_user.id),
    v_user.created_at, v_user.updated_at, v_session.expires_at;
end;
$$;
comment on function rowgate.authenticate_login_code(text, bytea, bytea, bytea, text, bytea) is '@behavior -*
Signs in with a login code and the attempt it was issued to: ok with the user and the new session''s expiry (and the browser''s device hash and the client''s network recorded as the account''s), or invalid (a wrong code counts against the attempt; 5 end it).';
grant execute on function rowgate.authenticate_login_code(text, bytea, bytea, bytea, text, bytea) to rowgate_anonymous;

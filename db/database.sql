-- rowgate: per-database hardening that only a superuser can do (the owner does
-- not own pg_catalog). Idempotent: run it as a superuser in each rowgate
-- database after creating it (start-up does, for the embedded database and when
-- ROOT_DATABASE_URL is set).

-- Large objects: PostgreSQL lets PUBLIC create them, which would let an analyst
-- (or any API role) store arbitrary bytes in the database.
revoke execute on function pg_catalog.lo_create(oid), pg_catalog.lo_creat(integer),
  pg_catalog.lo_from_bytea(oid, bytea), pg_catalog.lo_import(text), pg_catalog.lo_import(text, oid)
  from public;

-- UUIDv7 before PostgreSQL 18, whose uuidv7() is built in: the migrations use
-- uuidv7() as a column default, and they run with search_path `pg_catalog,
-- rowgate_compat` (.gmrc, src/db/setup.ts), so on 16 and 17 the name resolves
-- here and on 18 to pg_catalog's own. It is made on 18 too, where nothing
-- resolves to it: the same function on every major, tested on every major. The schema belongs to the superuser, so no
-- role that runs migrations or requests can put another uuidv7 in its way. A
-- pg_dump (and pg_upgrade) carries the schema with the tables whose defaults
-- name it. data/schema.sql leaves the schema out (src/db/schema-dump.ts): it is
-- set-up, not something the migrations make.
do $compat$
begin
  create schema if not exists rowgate_compat;
  comment on schema rowgate_compat is 'What PostgreSQL 18 has built in, for 16 and 17.';
  revoke all on schema rowgate_compat from public;
  grant usage on schema rowgate_compat to public;
  -- The layout of 18's: 48 bits of Unix milliseconds, the version (7), 12 bits of
  -- the millisecond's fraction, the variant (0b10), then random bits. Like 18's,
  -- ids one session makes only increase, even when the clock stands still or goes
  -- back: the last one's time is kept in a session setting, and the shift, as in
  -- 18, is added after. Unlike 18's, a rolled back transaction rolls that setting
  -- back too, and the clock is read in microseconds, not nanoseconds.
  create or replace function rowgate_compat.uuidv7(p_shift interval) returns uuid
    language plpgsql volatile parallel unsafe
    set search_path = pg_catalog
  as $fn$
  declare
    v_clock timestamptz := clock_timestamp();
    -- 4096ths of a millisecond since 1970: the 48 + 12 time bits of the id
    v_at bigint := floor(extract(epoch from v_clock) * 4096000)::bigint;
    v_last bigint := coalesce(nullif(current_setting('rowgate.uuidv7_last', true), '')::bigint, 0);
  begin
    if v_at <= v_last then
      v_at := v_last + 1;
    end if;
    perform set_config('rowgate.uuidv7_last', v_at::text, false);
    v_at := v_at + floor(extract(epoch from (v_clock + p_shift) - v_clock) * 4096000)::bigint;
    -- 0x7000 sets the version over the fraction; gen_random_uuid's last 8 bytes
    -- are random but for the variant bits, which are UUIDv7's too
    return (lpad(to_hex(v_at >> 12), 12, '0') || to_hex(28672 | (v_at & 4095))
      || substr(replace(gen_random_uuid()::text, '-', ''), 17))::uuid;
  end
  $fn$;
  comment on function rowgate_compat.uuidv7(interval) is 'A UUIDv7 laid out as PostgreSQL 18''s uuidv7(interval) lays it out, its time shifted by p_shift, increasing within a session before the shift.';
  create or replace function rowgate_compat.uuidv7() returns uuid
    language sql volatile parallel unsafe
    set search_path = pg_catalog
    return rowgate_compat.uuidv7(interval '0');
  comment on function rowgate_compat.uuidv7() is 'A UUIDv7 laid out as PostgreSQL 18''s uuidv7() lays it out, increasing within a session.';
end
$compat$;

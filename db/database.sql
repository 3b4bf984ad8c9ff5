-- rowgate: per-database hardening that only a superuser can do (the owner does
-- not own pg_catalog). Idempotent: run it as a superuser in each rowgate
-- database after creating it (start-up does, for the embedded database and when
-- ROOT_DATABASE_URL is set).

-- Large objects: PostgreSQL lets PUBLIC create them, which would let an analyst
-- (or any API role) store arbitrary bytes in the database.
revoke execute on function pg_catalog.lo_create(oid), pg_catalog.lo_creat(integer),
  pg_catalog.lo_from_bytea(oid, bytea), pg_catalog.lo_import(text), pg_catalog.lo_import(text, oid)
  from public;

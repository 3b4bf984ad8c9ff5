-- A new table and its indexes: nobody reads it yet, so nothing waits.
set local lock_timeout = '2s';
create table rowgate.labels (id uuid primary key default gen_random_uuid(), name text not null, created_at timestamptz not null default now());
create index labels_name on rowgate.labels (name);

-- A volatile default rewrites the whole table under an ACCESS EXCLUSIVE lock.
set local lock_timeout = '2s';
alter table rowgate.products add column public_ref uuid default gen_random_uuid();

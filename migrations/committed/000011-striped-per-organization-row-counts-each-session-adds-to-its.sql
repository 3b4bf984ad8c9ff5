--! Previous: sha1:f5db50ebe09f5e7064b343eca2faf229697bbdc9
--! Hash: sha1:f4c2ac03d63c72399fdf51d9cf22791ef97b027d
--! Message: Striped per-organization row counts: each session adds to its own stripe, totals are the sum, exact as before

-- Issue 16, part 4: the per-organization row counter was one row that every
-- insert of an organization updated, so a busy organization's writes queued on
-- it (LESSONS: one busy organization ran 0.74x the write rate of writes spread
-- over many). The count is now striped: each database session adds to its own
-- row of the organization's count (the backend's pid picks one of 64 stripes),
-- and a total is the sum of the stripes, exact as before. Sessions writing the
-- same organization at the same moment no longer wait for one another (two
-- sessions share a stripe only when their pids agree modulo 64).
alter table rowgate_private.organization_row_counts add column if not exists stripe smallint not null default 0;
do $$
begin
  if not exists (select 1 from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any (i.indkey)
      where i.indrelid = 'rowgate_private.organization_row_counts'::regclass and i.indisprimary and a.attname = 'stripe') then
    alter table rowgate_private.organization_row_counts drop constraint organization_row_counts_pkey;
    alter table rowgate_private.organization_row_counts add primary key (organization_id, resource, stripe);
  end if;
end
$$;

create or replace function rowgate_private.tg__count_rows() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_soft boolean := tg_argv[1] = 'soft';
  v_delta integer;
  v_organization_id uuid;
begin
  -- (each branch names deleted_at only for tables that have it: PL/pgSQL
  -- compiles a statement when it first runs it)
  if tg_op = 'INSERT' then
    v_organization_id := new.organization_id;
    v_delta := 1;
    if v_soft then
      v_delta := case when new.deleted_at is null then 1 else 0 end;
    end if;
  elsif tg_op = 'UPDATE' then
    v_organization_id := new.organization_id;
    v_delta := (case when new.deleted_at is null then 1 else 0 end) - (case when old.deleted_at is null then 1 else 0 end);
  else
    v_organization_id := old.organization_id;
    v_delta := -1;
    if v_soft then
      v_delta := case when old.deleted_at is null then -1 else 0 end;
    end if;
  end if;
  if v_delta <> 0 then
    insert into rowgate_private.organization_row_counts as c (organization_id, resource, stripe, row_count)
      values (v_organization_id, tg_argv[0], pg_backend_pid() % 64, v_delta)
      on conflict (organization_id, resource, stripe) do update set row_count = c.row_count + excluded.row_count;
  end if;
  return null;
end;
$$;

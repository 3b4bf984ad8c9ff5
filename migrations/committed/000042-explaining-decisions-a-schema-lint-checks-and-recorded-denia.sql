--! Previous: sha1:795a032ba2b2a781ead3d7576a889ab8f2962d82
--! Hash: sha1:ae609fb69d1ed1ca236ed39cca75cac1db6b02e4
--! Message: Explaining decisions: a schema lint, checks and recorded denials

--! split: 001-lint-findings.sql
-- `rowgate db lint` (SPEC §20) reads the policies the way a reviewer would, and two of
-- them call rowgate_hidden.current_subject_kind() bare: with no column among its
-- arguments it is the same for every row, yet unwrapped it is evaluated once per row.
-- The organization-access-token policy is restated with the call in a `select` (one
-- evaluation per statement, an initPlan), and otherwise unchanged.
alter policy select_manage on rowgate.organization_access_tokens
  using (
    organization_id = any ((select rowgate_hidden.current_organization_ids('access_tokens:manage'))::uuid[])
    and deleted_at is null
    and (select rowgate_hidden.current_subject_kind()) = 'user'
    and (select rowgate_hidden.has_scope('organization_access_tokens_read'))
  );

-- The membership-management policy belongs to the teams work (SPEC §21), which restates
-- who may change a membership; until then the finding is waived on the policy itself,
-- so that a restated policy is linted afresh.
comment on policy update_manage on rowgate.memberships is
  '@lint-allow per-row-helper: current_subject_kind() reads one transaction setting, on rows the organization index has already narrowed; the teams migration (SPEC §21) restates this policy';

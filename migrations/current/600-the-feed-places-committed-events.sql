-- The event feed (SPEC §17) hands out events in the order their transactions become visible,
-- and no other transaction (another database's, an analyst's, a migration's) may hold it back.
-- A position taken at insert time (the transaction's id) can only be handed out once every
-- older transaction has ended, which is the cluster-wide xmin horizon. Instead one sequencer,
-- rowgate_private.place_events(), numbers events after they commit: it runs serialized and
-- sees committed rows only, so positions grow in the order events become visible and a reader
-- never sees a lower position appear after a higher one. An event's position is null until
-- the sequencer has placed it. Positions already given are renumbered once here, in id order
-- (the cursors of the old format answer 410 CursorExpired: src/resources/events.ts).
alter table rowgate.events alter column feed_position drop default;
-- squawk-ignore ban-drop-not-null -- a position is null until the sequencer places its event; the previous release's feed is replaced with this one (docs/operations.md, Upgrading)
alter table rowgate.events alter column feed_position drop not null;
-- squawk-ignore require-concurrent-index-deletion -- the events are renumbered in this migration under its exclusive lock anyway (docs/operations.md, Upgrading)
drop index rowgate.events_organization_feed;
drop sequence rowgate_private.event_positions;

-- Not cached: each nextval is greater than every one handed out before, in any session.
create sequence rowgate_private.feed_positions as bigint;
comment on sequence rowgate_private.feed_positions is 'The feed''s positions, handed out by the sequencer (place_events) alone.';

-- squawk-ignore changing-column-type -- positions become the sequencer's numbers once, in id order; the rewrite takes time in proportion to the events kept (docs/operations.md, Upgrading)
alter table rowgate.events alter column feed_position type bigint
  using case when feed_position is null then null else nextval('rowgate_private.feed_positions') end;
comment on column rowgate.events.feed_position is 'The event''s place in the feed (SPEC §17), given once its transaction has committed (null until then, at most about a second). Order by it to read events as the feed hands them out.';

-- The feed reads each organization's placed events in position order; the sequencer finds
-- the unplaced ones (committed or still open: only the committed are visible to it) in id order.
-- squawk-ignore require-concurrent-index-creation -- the events are renumbered in this migration under its exclusive lock anyway (docs/operations.md, Upgrading)
create index events_organization_feed on rowgate.events (organization_id, feed_position) where feed_position is not null;
-- squawk-ignore require-concurrent-index-creation -- the events are renumbered in this migration under its exclusive lock anyway (docs/operations.md, Upgrading)
create index events_unplaced on rowgate.events (id) where feed_position is null;

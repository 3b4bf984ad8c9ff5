-- An ALTER with no lock_timeout waits for its lock as long as it takes, and every query queues behind it.
alter table rowgate.products add column note text;

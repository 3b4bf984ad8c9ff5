-- Every lock this migration takes is waited for at most two seconds: a migration queued
-- behind a long reader would otherwise hold every request that queues behind it. A
-- migration that times out is rolled back whole and run again (`npx rowgate db migrate`).
set local lock_timeout = '2s';

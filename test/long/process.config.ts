// The runs against a real server process (`node src/main.ts`) on its
// own embedded database: the database outage, SIGTERM under load, the slow
// query, the load test. One file at a time: they measure time.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/long/*.process.long.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 30 * 60_000,
    hookTimeout: 300_000,
  },
});

// The long runs that use the suite's database server (npm run
// test:props, test:fuzz), and the browser's (test:browser): outside the default `vitest run` include, each with
// its npm script. The runs against a real server process (outage, shutdown,
// load) have their own configuration: test/long/process.config.ts.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/long/*.props.long.ts', 'test/long/*.fuzz.long.ts', 'test/long/*.browser.long.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    // these runs take minutes by design
    testTimeout: 60 * 60_000,
    hookTimeout: 300_000,
  },
});

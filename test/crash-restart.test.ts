// A server process that dies without stopping (killed, or out of memory) leaves
// its embedded PostgreSQL running. The next `npm start` on the same home says so,
// adopts that database, serves, and stops it when it stops.
import { expect, test } from 'vitest';
import { databaseRunning, startServerProcess } from './faults/server-process.ts';

test('the next start announces and adopts the database a killed server left running, and stops it', async () => {
  const first = await startServerProcess();
  let second: Awaited<ReturnType<typeof startServerProcess>> | undefined;
  try {
    first.child.kill('SIGKILL');
    await first.exited;
    expect(await databaseRunning(first.home)).toBe(true); // orphaned, as after an out-of-memory exit

    second = await startServerProcess({}, { home: first.home });
    const said = second.lines.map((l) => l.line).join('\n');
    expect(said).toMatch(
      /embedded PostgreSQL in .* \(pid \d+\) was still running, left behind by a rowgate server that did not stop cleanly/,
    );
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);

    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(await databaseRunning(first.home)).toBe(false);
  } finally {
    await (second ?? first).stop();
  }
}, 120_000);

// Run as root, the embedded PostgreSQL runs as the OS user postgres: a folder it
// cannot enter on the way to its programs or its data stops `npm start`,
// `npm test` and the CLI before anything is created, with one sentence naming
// the folder and the fix (SPEC §16).
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { assertPostgresCanReach, folderUserCannotEnter, UnreachableFolderError } from '../src/db/postgres-folder-access.ts';

const root = path.join(tmpdir(), `rowgate-reach-${randomUUID()}`);
const closed = path.join(root, 'home-0700');
const open = path.join(root, 'srv-0755');
// someone who neither owns the folders nor is in their group: only "others" bits count
const stranger = { uid: 64_999, gid: 64_999 };

beforeAll(async () => {
  await mkdir(path.join(closed, 'project', 'node_modules'), { recursive: true });
  await mkdir(path.join(open, 'project'), { recursive: true });
  await chmod(root, 0o755);
  await chmod(closed, 0o700);
  await chmod(open, 0o755);
});
afterAll(async () => rm(root, { recursive: true, force: true }));

test('the first folder a stranger cannot enter is named; one it can enter is not', async () => {
  expect(await folderUserCannotEnter(path.join(closed, 'project', 'node_modules'), stranger)).toBe(closed);
  expect(await folderUserCannotEnter(path.join(open, 'project'), stranger)).toBeNull();
  // a folder yet to be created (made 0755) is no obstacle; the closed one on the way still is
  expect(await folderUserCannotEnter(path.join(open, 'project', 'not-yet', '.rowgate'), stranger)).toBeNull();
  expect(await folderUserCannotEnter(path.join(closed, 'not-yet'), stranger)).toBe(closed);
});

test('its owner, or its group with g+x, may enter it', async () => {
  const { uid, gid } = await import('node:fs/promises').then((fs) => fs.stat(closed));
  expect(await folderUserCannotEnter(closed, { uid, gid: stranger.gid })).toBeNull();
  await chmod(closed, 0o710);
  try {
    expect(await folderUserCannotEnter(closed, { uid: stranger.uid, gid })).toBeNull();
  } finally {
    await chmod(closed, 0o700);
  }
});

test('the refusal is one sentence naming the folder and the fix', async () => {
  const error = await assertPostgresCanReach(path.join(closed, 'project', 'node_modules'), path.join(open, 'data'), stranger).catch(
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UnreachableFolderError);
  const message = (error as Error).message;
  expect(message).not.toContain('\n');
  expect(message).toContain(`cannot enter ${closed} `);
  expect(message).toContain(`chmod o+x ${closed}`);
  const data = await assertPostgresCanReach(path.join(open, 'project'), path.join(closed, 'data'), stranger).catch((e: unknown) => e);
  expect((data as Error).message).toMatch(/set ROWGATE_HOME to a folder it can reach/);
  await expect(assertPostgresCanReach(path.join(open, 'project'), path.join(open, 'data'), stranger)).resolves.toBeUndefined();
  // the data folder itself may be closed: opening the cluster makes it 0755 (a mkdtemp folder is 0700)
  await expect(assertPostgresCanReach(path.join(open, 'project'), closed, stranger)).resolves.toBeUndefined();
});

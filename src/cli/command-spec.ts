// What an operator command is (SPEC §10): its options, each checked (and converted)
// when the command line is read, before any database is reached, and what it does
// there. The command groups are in the *-commands.ts files beside this one.
import { InvalidArgumentError } from 'commander';
import type pg from 'pg';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { UUID } from '../core/fields.ts';
import type { Connection } from '../db/connect.ts';

/** Bad usage the database revealed (an unknown user): exit code 2, like a parsing error. */
export class UsageError extends Error {}

export type Options = Record<string, unknown>;

export interface OptionSpec {
  flags: string;
  description: string;
  required?: boolean;
  /** checks (and converts) the value when the command line is read, before any database */
  parse?: (value: string) => unknown;
}

export interface CommandSpec {
  description: string;
  options?: OptionSpec[];
  run: (db: pg.Client, options: Options, connection: Connection, config: Config) => Promise<unknown>;
  /** true: applies the migrations (db migrate); false: must not (db status reports on them); default: only the embedded database is migrated */
  migrate?: boolean;
  /** true: needs only DATABASE_URL (no AUTH_DATABASE_URL, no ROWGATE_SECRET): a DBA's command */
  databaseOnly?: boolean;
  /** true: may create the embedded database (db init); every other command refuses a ROWGATE_HOME without one */
  createsDatabase?: boolean;
  /** true: the result is a list printed one JSON value a line (db lint's findings), nothing when empty */
  lines?: boolean;
}

const emailSchema = z.email().max(320);

export function email(value: string): string {
  if (!emailSchema.safeParse(value).success) throw new InvalidArgumentError('Not an e-mail address.');
  return value.toLowerCase();
}

export function uuid(value: string): string {
  if (!UUID.test(value)) throw new InvalidArgumentError('Not a uuid.');
  return value;
}

export function scopeList(value: string): string[] {
  const scopes = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!scopes.length) throw new InvalidArgumentError('At least one scope is needed.');
  return scopes;
}

export function nameList(value: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!names.length) throw new InvalidArgumentError('At least one name is needed.');
  return names;
}

export function seconds(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(n) || n <= 0)
    throw new InvalidArgumentError('Not a positive whole number of seconds.');
  return n;
}

export const userIdOption: OptionSpec = { flags: '--user-id <uuid>', description: 'the user', required: true, parse: uuid };

export function count(value: string): number {
  if (!/^[0-9]{1,9}$/.test(value) || Number(value) <= 0) throw new InvalidArgumentError('Not a positive whole number.');
  return Number(value);
}

/** The one row a command's statement returns; none is bad usage (an unknown user): `missing` says which. */
export async function one<T extends object>(db: pg.Client, text: string, values: unknown[], missing: string): Promise<T> {
  const { rows } = await db.query<T>(text, values);
  if (!rows[0]) throw new UsageError(missing);
  return rows[0];
}

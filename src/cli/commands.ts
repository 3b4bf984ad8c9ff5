// The operator commands (SPEC §10), by group: what each takes, checked before any
// database is reached, and what it does there (command-spec.ts says how a command
// is declared). src/cli/main.ts turns them into the command line.
// The database's modules are imported by the commands that use them, when they
// run, so that the command line is checked before they load.
import { accountCommands } from './account-commands.ts';
import { analystCommands } from './analyst-commands.ts';
import type { CommandSpec } from './command-spec.ts';
import { databaseCommands } from './database-commands.ts';
import { deliveryCommands } from './delivery-commands.ts';

export { type CommandSpec, type Options, UsageError } from './command-spec.ts';

export const groups: Record<string, string> = {
  users: 'users of the API',
  sessions: 'web sessions',
  tokens: 'personal access tokens',
  analysts: "analysts' PostgreSQL logins (SPEC §15)",
  mail: 'the development outbox',
  db: 'the database: create, migrate, inspect',
  webhooks: 'webhook delivery (SPEC §17)',
};

/** Every command, by `<group> <command>`. */
export const commands: Record<string, CommandSpec> = { ...accountCommands, ...analystCommands, ...deliveryCommands, ...databaseCommands };

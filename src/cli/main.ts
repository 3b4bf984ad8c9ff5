#!/usr/bin/env node
// `npx rowgate <command>`: operator commands (SPEC §10, §16). JSON on stdout and
// nothing else; usage errors are one line on stderr with exit code 2, checked
// before any database is reached. Works against DATABASE_URL or the embedded
// database of ROWGATE_HOME, running or not; only `db init` (and `npm start`)
// creates one.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { UnreachableFolderError } from '../db/postgres-folder-access.ts';
import { commands, groups, UsageError, type CommandSpec, type Options } from './commands.ts';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * The configuration; a DBA's commands (migrations, analysts) need only
 * DATABASE_URL, not the server's AUTH_DATABASE_URL and ROWGATE_SECRET.
 */
function commandConfig(command: CommandSpec): Config {
  const env = process.env;
  if (!command.databaseOnly || !env.DATABASE_URL) return loadConfig(env);
  const config = loadConfig({
    ...env,
    AUTH_DATABASE_URL: env.AUTH_DATABASE_URL || env.DATABASE_URL,
    ROWGATE_SECRET: env.ROWGATE_SECRET || 'x'.repeat(32),
  });
  return { ...config, AUTH_DATABASE_URL: env.AUTH_DATABASE_URL || undefined, ROWGATE_SECRET: env.ROWGATE_SECRET || undefined };
}

async function execute(command: CommandSpec, options: Options) {
  const config = commandConfig(command);
  // the database's modules load only once the command line is known to be right:
  // help, version and bad usage answer at once, even on a busy machine
  const [{ default: pg }, { connect }, { AnalystError }, { NoEmbeddedDatabaseError }] = await Promise.all([
    import('pg'),
    import('../db/connect.ts'),
    import('../db/analysts.ts'),
    import('../db/embedded.ts'),
  ]);
  try {
    await run(command, options, config, pg, connect);
  } catch (error) {
    if (error instanceof AnalystError || error instanceof NoEmbeddedDatabaseError) throw new UsageError(error.message);
    throw error;
  }
}

async function run(
  command: CommandSpec,
  options: Options,
  config: Config,
  pg: typeof import('pg').default,
  connect: typeof import('../db/connect.ts').connect,
) {
  // The embedded database is brought up to date by any command (a newcomer's
  // convenience); a given DATABASE_URL only by `db migrate`: deploying the schema
  // is the operator's explicit step, never a side effect.
  const migrate = command.migrate ?? !config.DATABASE_URL;
  const connection = await connect(config, { exclusive: false, migrate, create: command.createsDatabase === true });
  const db = new pg.Client({ connectionString: connection.ownerUrl });
  try {
    await db.connect();
    const result = await command.run(db, options, connection, config);
    if (command.lines) for (const line of result as unknown[]) process.stdout.write(`${JSON.stringify(line)}\n`);
    else process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await db.end();
    if (connection.embedded?.startedHere) await connection.embedded.stop();
  }
}

function program(): Command {
  const root = new Command('rowgate')
    .description(
      'Operator commands of rowgate. Each prints JSON on stdout, against DATABASE_URL or else the embedded database of ROWGATE_HOME (default .rowgate).',
    )
    .version(version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'print the usage of rowgate or of a command')
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`rowgate: ${text.replace(/^error: /, '')}`) })
    .addHelpText(
      'after',
      '\nExit codes: 0 done, 1 failed (the database), 2 bad usage. Run `rowgate <group> <command> --help` for its options.',
    );
  for (const [name, spec] of Object.entries(commands)) {
    const [groupName, commandName] = name.split(' ') as [string, string];
    const group = root.commands.find((c) => c.name() === groupName) ?? root.command(groupName).description(groups[groupName] ?? groupName);
    const command = group.command(commandName).description(spec.description).allowExcessArguments(false);
    for (const option of spec.options ?? []) {
      const parse = option.parse ? (value: string) => option.parse!(value) : undefined;
      if (option.required) command.requiredOption(option.flags, option.description, parse as never);
      else command.option(option.flags, option.description, parse as never);
    }
    command.action((options: Options) => execute(spec, options));
  }
  return root;
}

/** One line on stderr, and the exit code: 2 for anything the operator can fix in the command, 1 for the rest. */
function report(error: unknown): number {
  const e = error as { code?: string; constraint?: string; message?: string; detail?: string };
  if (error instanceof CommanderError) {
    // commander has written its message (or the help) already
    // `help [command]` asked for its help (commander's exit code 0); a group named without a command gets it on
    // stderr (commander's 1: a usage error, so 2 here)
    if (error.code === 'commander.help') return error.exitCode === 0 ? 0 : 2;
    return ['commander.helpDisplayed', 'commander.version'].includes(error.code) ? 0 : 2;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
  // RG422: the database refused a value the operator gave (an unknown scope); 23505: it exists already
  if (error instanceof UsageError || e.code === 'RG422') {
    process.stderr.write(`rowgate: ${e.message}\n`);
    return 2;
  }
  if (error instanceof UnreachableFolderError) {
    process.stderr.write(`${error.message}\n`);
    return 1;
  }
  if (e.code === '23505' && e.constraint === 'users_email_live') {
    process.stderr.write('rowgate: a user with this e-mail address exists already\n');
    return 2;
  }
  process.stderr.write(`rowgate: ${e.message ?? error}${e.detail ? ` (${e.detail})` : ''}\n`);
  return 1;
}

program()
  .parseAsync(process.argv)
  .catch((error) => {
    process.exitCode = report(error);
  });

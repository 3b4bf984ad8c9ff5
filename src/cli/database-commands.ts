// The database's commands: creating and migrating it, its migrations' status,
// reading its schema as a reviewer would (db lint), checking its data's
// invariants (db verify), and its connection URLs. What they read is loaded only
// when one of them runs.
import { embeddedUrl } from '../db/embedded.ts';
import { type CommandSpec, nameList, UsageError } from './command-spec.ts';

export const databaseCommands: Record<string, CommandSpec> = {
  'db init': {
    description: 'create the embedded database in ROWGATE_HOME (or bring it up to date), as npm start does',
    createsDatabase: true,
    run: async (_db, _o, c) => {
      if (!c.embedded) throw new UsageError('DATABASE_URL is set: db init creates the embedded database; use db migrate');
      return { ROWGATE_HOME: c.embedded.home, migrated: true };
    },
  },
  'db migrate': {
    description: 'apply the committed migrations (start-up does it too)',
    databaseOnly: true,
    migrate: true,
    run: async () => ({ migrated: true }),
  },
  'db status': {
    description: 'pending migrations; exit code 1 when some are pending or migrations/current/ is not empty',
    migrate: false,
    databaseOnly: true,
    run: async (_db, _o, c) => {
      // graphile-migrate's status insists on a shadow database URL, though it never connects to it
      if (!process.env.SHADOW_DATABASE_URL) {
        const shadow = new URL(c.ownerUrl);
        shadow.pathname = `${shadow.pathname}_shadow`;
        process.env.SHADOW_DATABASE_URL = shadow.toString();
      }
      const { migrationStatus } = await import('../db/setup.ts');
      const status = await migrationStatus(c.ownerUrl);
      const pending = status.remainingMigrations ?? [];
      if (pending.length || status.hasCurrentMigration) process.exitCode = 1;
      return { pending_migrations: pending, current_migration_not_empty: status.hasCurrentMigration };
    },
  },
  'db lint': {
    description:
      "the schema read as a reviewer would (SPEC §20): one JSON line a finding, exit code 1 when there are any; waive one with `@lint-allow <rule>: <reason>` in the object's comment",
    databaseOnly: true,
    lines: true,
    options: [{ flags: '--schema <names>', description: "the schemas to read, comma-separated (default the project's)", parse: nameList }],
    run: async (db, o) => {
      const { lintSchema } = await import('../db/lint.ts');
      const findings = await lintSchema(db, (o.schema as string[] | undefined) ?? undefined);
      if (findings.length) process.exitCode = 1;
      return findings;
    },
  },
  'db verify': {
    description:
      'the invariants the data must always hold (an admin per organization with members, defined roles, no event without its organization, …): one JSON line a violating row, exit code 1 when there are any',
    databaseOnly: true,
    lines: true,
    run: async (db) => {
      const { verifyData } = await import('../db/verify.ts');
      const violations = await verifyData(db);
      if (violations.length) process.exitCode = 1;
      return violations;
    },
  },
  'db urls': {
    description: "the database's connection URLs, for graphile-migrate and psql in development",
    run: async (_db, _o, c) => {
      if (!c.embedded) return { DATABASE_URL: c.ownerUrl, AUTH_DATABASE_URL: c.authenticatorUrl };
      const { state } = c.embedded;
      return {
        DATABASE_URL: c.ownerUrl,
        AUTH_DATABASE_URL: c.authenticatorUrl,
        SHADOW_DATABASE_URL: embeddedUrl(state, 'owner', 'rowgate_shadow'),
        ROOT_DATABASE_URL: embeddedUrl(state, 'superuser', 'postgres'),
      };
    },
  },
};

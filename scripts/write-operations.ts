// Writes the migration part that makes rowgate_hidden.operations what the route table
// says (SPEC §20): `node scripts/write-operations.ts <file.sql>` (default: stdout).
// Run it when a route is added, removed or changes its access or policy, into the
// parts of the next migration; test/authorization-check.test.ts fails until then.
import { writeFileSync } from 'node:fs';
import { operationsSql } from '../src/http/operations.ts';
import { allRoutes } from '../src/server/route-table.ts';

const sql = operationsSql(allRoutes(null as never));
const [file] = process.argv.slice(2);
if (file) writeFileSync(file, sql);
else process.stdout.write(sql);

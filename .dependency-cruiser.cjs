// The folders of src/ are layers, and every import points down the list below
// (a folder may import its own files and any folder lower in the list, never a
// higher one), with no import circle anywhere. `npm test` checks it
// (scripts/check-imports.ts, run before the tests). README.md lists what each holds.
//
//   core, config.ts  words every layer shares: errors, fields, money, the request record, SQLSTATEs
//   db               pools, transactions, placement, migrations, the embedded PostgreSQL,
//                    and the SQL-facing features the CLI runs (analysts, lint, verify)
//   upkeep           timers: work every server does for the database on a clock
//   auth             credentials, authentication, authorization, tokens
//   operating        request ids, the access log, metrics, rate limits, logging
//   listing          the list kit: list queries, their statements, the pages they answer
//   http             the REST kernel: route declarations, the pipeline, answers, the router
//   webhooks         delivery of webhook events
//   resources        the REST resources (the route table's entries)
//   signin           sign-in by e-mailed code, mail
//   oauth2           the OAuth2 authorization server
//   graphql          PostGraphile and its plugins
//   server           the composition root: the app, the route table, starting and stopping
//   cli, main.ts     the programs
const layers = [
  ['core', '^src/(core/|config\\.[jt]s$)'],
  ['db', '^src/db/'],
  ['upkeep', '^src/upkeep/'],
  ['auth', '^src/auth/'],
  ['operating', '^src/operating/'],
  ['listing', '^src/listing/'],
  ['http', '^src/http/'],
  ['webhooks', '^src/webhooks/'],
  ['resources', '^src/resources/'],
  ['signin', '^src/signin/'],
  ['oauth2', '^src/oauth2/'],
  ['graphql', '^src/graphql/'],
  ['server', '^src/server/'],
  ['cli', '^src/(cli/|main\\.[jt]s$)'],
];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Modules that import each other, directly or through others, cannot be understood one at a time',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'in-a-layer',
      comment: 'Every file of src/ belongs to one of the layers above',
      severity: 'error',
      from: { path: '^src/', pathNot: layers.map(([, path]) => path) },
      to: {},
    },
    ...layers.slice(0, -1).map(([name, path], i) => ({
      name: `${name}-points-down`,
      comment: `${name} may import only ${
        layers
          .slice(0, i)
          .map(([lower]) => lower)
          .join(', ') || 'itself'
      }`,
      severity: 'error',
      from: { path },
      to: { path: layers.slice(i + 1).map(([, higher]) => higher) },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules' },
    moduleSystems: ['es6'],
  },
};

// The server's own bounds on a GraphQL request, run before grafast plans it
// (SPEC §13): the document's size through parse and validation (cached by
// text), and its page arguments with the request's variables.
import { BAD_USER_INPUT, makeParseAndValidate, TOO_COMPLEX } from './limits.ts';
import { pageArgumentErrors } from './page-arguments.ts';

/**
 * What the server itself checks before grafast plans a request: the document's
 * size (parse and validation, cached by text) and its page arguments with this
 * request's variables. Refusals are ordinary GraphQL errors with their codes.
 */
export const rowgateLimitsPlugin = (refused: (code: string) => void = () => {}): GraphileConfig.Plugin => ({
  name: 'RowgateLimitsPlugin',
  description: 'Bounds every GraphQL request before it is planned (SPEC §13)',
  version: '1.0.0',
  grafserv: {
    middleware: {
      setPreset(next, event) {
        const original = event.getExecutionConfig;
        // one parse-and-validate (and its cache) per schema
        let ours: { schema: object; parseAndValidate: ReturnType<typeof makeParseAndValidate> } | undefined;
        event.getExecutionConfig = async function (this: ThisParameterType<typeof original>, ctx) {
          const config = await original.call(this, ctx);
          if (ours?.schema !== config.schema) {
            const parseAndValidate = makeParseAndValidate(config.schema);
            // refusals counted for the metrics (SPEC §14)
            const counting: typeof parseAndValidate = (query) => {
              const result = parseAndValidate(query);
              for (const error of ('errors' in result ? result.errors : undefined) ?? []) {
                if (error.extensions?.code === TOO_COMPLEX) refused(TOO_COMPLEX);
              }
              return result;
            };
            ours = { schema: config.schema, parseAndValidate: counting };
          }
          return { ...config, parseAndValidate: ours.parseAndValidate };
        };
        return next();
      },
    },
  },
  grafast: {
    middleware: {
      execute(next, { args }) {
        const errors = pageArgumentErrors(args.document, args.operationName, args.variableValues as Record<string, unknown>);
        if (errors.length) refused(BAD_USER_INPUT);
        return errors.length ? { errors } : next();
      },
    },
  },
});

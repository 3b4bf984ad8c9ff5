// Every collection returns at most a page (SPEC §13): a connection or list asked
// without `first` or `last` returns its first LIMITS.pageSize nodes. PostGraphile
// applies `first` by itself only when the argument is given, so its own
// application is replaced by one that sees `first` and `last` together: the page
// is `first` when given (checked to be 0..100 before planning: limits.ts), all of
// `last` when only that is given, the default page when neither is, whether they
// arrive as literals or as variables (a variable may be null).
// Only types are imported: grafast comes from `build`, as graphile recommends.
import type {} from 'postgraphile';
import type { FieldArgs, FieldInfo, Step } from 'postgraphile/grafast';
import { LIMITS } from './limits.ts';

const isCollection = (scope: { isPgFieldConnection?: boolean; isPgFieldSimpleCollection?: boolean }) =>
  Boolean(scope.isPgFieldConnection || scope.isPgFieldSimpleCollection);

/** the page of a collection, from its `first` and `last` */
function pageOf([first, last]: readonly [unknown, unknown]): number | null {
  if (typeof first === 'number') return first;
  return last == null ? LIMITS.pageSize : null;
}

interface Paginated extends Step {
  setFirst($first: Step): unknown;
}

export const DefaultPagePlugin: GraphileConfig.Plugin = {
  name: 'RowgateDefaultPagePlugin',
  description: 'Collections return at most a page: first 100 when neither first nor last is given',
  version: '1.0.0',
  after: ['PgFirstLastBeforeAfterArgsPlugin'],
  schema: {
    hooks: {
      // `first` is applied with `last` by the field's plan below
      GraphQLObjectType_fields_field_args_arg(arg, _build, context) {
        if (!isCollection(context.scope) || context.scope.argName !== 'first' || !arg.applyPlan) return arg;
        return { ...arg, applyPlan: () => {} };
      },
      GraphQLObjectType_fields_field(field, build, context) {
        const plan = field.plan;
        if (!isCollection(context.scope) || !plan) return field;
        const { lambda, constant } = build.grafast;
        return {
          ...field,
          plan($parent: Step, fieldArgs: FieldArgs, info: FieldInfo) {
            const $collection = (plan as (...a: unknown[]) => Step)($parent, fieldArgs, info) as Paginated;
            const names = info.field.args.map((a) => a.name);
            if (!names.includes('first')) return $collection;
            const $last = names.includes('last') ? fieldArgs.getRaw('last') : constant(undefined);
            $collection.setFirst(lambda([fieldArgs.getRaw('first'), $last], pageOf, true));
            return $collection;
          },
        };
      },
    },
  },
};

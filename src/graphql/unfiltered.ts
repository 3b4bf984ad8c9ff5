// Whether a root connection's document leaves it unfiltered: over every row the
// subject may see, with no condition, filter or other argument than the page's
// and the order. Decided when the field is planned, so that what depends on it
// (counted-total.ts, organization-pages.ts) costs nothing per request.
import type { FieldArgs, FieldInfo } from 'postgraphile/grafast';

/** arguments that do not change which rows a connection holds */
const NOT_FILTERING = new Set(['first', 'last', 'offset', 'before', 'after', 'orderBy']);

/**
 * Every other argument is absent from the document and has no default: its
 * step is a constant `undefined` (a variable, even one left out, is not).
 * `isConstant` is grafast's ConstantStep test (grafast comes from `build`).
 */
export function isUnfiltered(fieldArgs: FieldArgs, info: FieldInfo, isConstantUndefined: (step: unknown) => boolean): boolean {
  return info.field.args.every((arg) => NOT_FILTERING.has(arg.name) || isConstantUndefined(fieldArgs.getRaw(arg.name)));
}

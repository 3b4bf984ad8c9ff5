// Whether a root connection's document leaves it unfiltered: over every row the
// subject may see, with no condition, filter or other argument than the page's
// and the order. Decided when the field is planned, so that what depends on it
// (counted-total.ts, organization-pages.ts) costs nothing per request.
import type { FieldArgs, FieldInfo } from 'postgraphile/grafast';

/** arguments that do not change which rows a connection holds */
const NOT_FILTERING = new Set(['first', 'last', 'offset', 'before', 'after', 'orderBy']);

/** grafast's ConstantStep class, from `build.grafast` (grafast itself is not imported here) */
type ConstantStepClass = abstract new (...args: never[]) => { data: unknown };

/**
 * Every other argument is absent from the document and has no default: its
 * step is a constant `undefined` (a variable, even one left out, is not).
 */
export function isUnfiltered(fieldArgs: FieldArgs, info: FieldInfo, ConstantStep: ConstantStepClass): boolean {
  return info.field.args.every((arg) => {
    if (NOT_FILTERING.has(arg.name)) return true;
    const $arg = fieldArgs.getRaw(arg.name);
    return $arg instanceof ConstantStep && $arg.data === undefined;
  });
}

// Page arguments, checked per request with its variables (SPEC §13): a
// document's text cannot bound `first: $n`, so this runs before execution,
// after the document's own bounds (src/graphql/limits.ts) passed.
import { GraphQLError, Kind, valueFromASTUntyped, type DocumentNode, type FieldNode, type SelectionSetNode } from 'postgraphile/graphql';
import { BAD_USER_INPUT, LIMITS } from './limits.ts';

/**
 * The page arguments of one request, with its variables: `first`/`last` in
 * 0..100 and `offset` ≥ 0. Errors name the argument and the field; none means
 * the request may be planned.
 */
export function pageArgumentErrors(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): GraphQLError[] {
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const operation = operationName
    ? operations.find((o) => o.name?.value === operationName)
    : operations.length === 1
      ? operations[0]
      : undefined;
  if (!operation) return []; // graphql-js answers this one itself
  const defaults = new Map(
    (operation.variableDefinitions ?? []).map((v) => [
      v.variable.name.value,
      v.defaultValue ? valueFromASTUntyped(v.defaultValue) : undefined,
    ]),
  );
  const fragments = new Map(document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  const errors: GraphQLError[] = [];
  const seen = new Set<FieldNode>();
  const check = (field: FieldNode) => {
    if (seen.has(field)) return;
    seen.add(field);
    for (const argument of field.arguments ?? []) {
      const name = argument.name.value;
      if (name !== 'first' && name !== 'last' && name !== 'offset') continue;
      const value =
        argument.value.kind === Kind.VARIABLE
          ? (variables?.[argument.value.name.value] ?? defaults.get(argument.value.name.value))
          : argument.value.kind === Kind.INT
            ? Number(argument.value.value)
            : undefined; // another kind of literal: the spec's rules refused it
      if (value === undefined || value === null || typeof value !== 'number') continue; // a wrong type: graphql-js's coercion error
      const bad = name === 'offset' ? value < 0 : value < 0 || value > LIMITS.pageSize;
      if (bad) {
        const range = name === 'offset' ? 'must be 0 or more' : `must be between 0 and ${LIMITS.pageSize}`;
        errors.push(
          new GraphQLError(`Argument "${name}" of "${field.name.value}" ${range}; got ${value}`, {
            nodes: argument,
            extensions: { code: BAD_USER_INPUT, argument: name },
          }),
        );
      }
    }
  };
  const visited = new Set<string>();
  const walk = (selectionSet: SelectionSetNode) => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        check(selection);
        if (selection.selectionSet) walk(selection.selectionSet);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet);
      } else {
        // each fragment once: its arguments are the same wherever it is spread
        const fragment = fragments.get(selection.name.value);
        if (!fragment || visited.has(fragment.name.value)) continue;
        visited.add(fragment.name.value);
        walk(fragment.selectionSet);
      }
    }
  };
  walk(operation.selectionSet);
  return errors;
}

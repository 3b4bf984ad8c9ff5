// The examples of the published OpenAPI document: each component schema's
// own (from its properties'), and the reference's copy (/docs), whose optional
// parameters are not pre-filled for "Try it out".

type JsonSchema = Record<string, unknown> & {
  $ref?: string;
  example?: unknown;
  examples?: unknown[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
};
export type OpenApiDocument = { components?: { schemas?: Record<string, JsonSchema> } };

/**
 * Every schema of the document has an example (SPEC §6): zod-openapi renders the
 * examples of fields, and a named schema (an object, a list) gets one assembled
 * from its fields' examples, following references.
 */
export function addComponentExamples(document: OpenApiDocument) {
  const schemas = document.components?.schemas ?? {};
  const exampleOf = (schema: JsonSchema | undefined, depth: number): unknown => {
    if (!schema || depth > 10) return undefined;
    if ('example' in schema) return schema.example;
    if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
    if (schema.$ref) return exampleOf(schemas[schema.$ref.replace('#/components/schemas/', '')], depth + 1);
    if (schema.properties) {
      const entries = Object.entries(schema.properties).map(([key, value]) => [key, exampleOf(value, depth + 1)] as const);
      return Object.fromEntries(entries.filter(([, value]) => value !== undefined));
    }
    if (schema.items) {
      const item = exampleOf(schema.items, depth + 1);
      return item === undefined ? undefined : [item];
    }
    for (const alternatives of [schema.anyOf, schema.oneOf, schema.allOf]) {
      for (const alternative of alternatives ?? []) {
        const example = exampleOf(alternative, depth + 1);
        if (example !== undefined) return example;
      }
    }
    return undefined;
  };
  for (const schema of Object.values(schemas)) {
    if ('example' in schema || schema.examples) continue;
    const example = exampleOf(schema, 0);
    if (example !== undefined) schema.example = example;
  }
}

type Parameter = { in?: string; required?: boolean; example?: unknown; examples?: unknown; schema?: JsonSchema; description?: string };

/**
 * The document as the rendered reference loads it: Swagger UI's "Try it out"
 * fills every parameter with its example, so a list would be asked with every
 * optional filter set (listing orders returned none of a user's 2,006). Here an
 * optional query parameter's example moves into its description; defaults
 * stay (they change nothing). The published document keeps its examples.
 */
export function tryItOutDocument(document: unknown): unknown {
  const copy = structuredClone(document) as { paths?: Record<string, Record<string, { parameters?: Parameter[] }>> };
  for (const item of Object.values(copy.paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== 'query' || parameter.required) continue;
        const example = parameter.example ?? parameter.schema?.example;
        for (const node of [parameter, parameter.schema ?? {}]) {
          delete node.example;
          delete node.examples;
        }
        if (example !== undefined)
          parameter.description =
            `${parameter.description ?? parameter.schema?.description ?? ''}\n\nExample: \`${String(example)}\``.trim();
      }
    }
  }
  return copy;
}

// Builds the published OpenAPI document (openapi/openapi.published.yaml: served at
// /openapi.yaml, mocked by Prism, the source of generated/api.ts) from the hand-written one
// (openapi/openapi.yaml, the file a person edits and the request validator reads).
//
// Why a built copy: the source composes each request body once, as `allOf` of LeadFields,
// ContactRequirement and IntakeSwitches with `unevaluatedProperties: false`. That is the
// single definition and what the validator's error mapping is written for, but integrators'
// tools cannot use it: Schemathesis cannot generate data for `unevaluatedProperties`, and
// type generators render ContactRequirement's bare `required` branches as `unknown`, so
// `{ name }` alone type-checks. Here each such schema becomes plain JSON Schema that every
// tool reads: one object with every property and `additionalProperties: false`, or, when a
// rule of `anyOf` branches applies (the contact rule), an `anyOf` of such objects, one per
// branch, each listing every property and requiring its own contact field. Same payloads
// accepted and refused (test/openapi-published.test.ts); response schemas are untouched.
import { parseDocument } from 'yaml';

const SCHEMAS = ['components', 'schemas'];
const HEADER = ' Built from openapi/openapi.yaml by scripts/generate-types.mjs (npm run generate); edit that\n'
  + ' file, not this one. Request bodies are expanded into plain objects here (see\n'
  + ' scripts/openapi-published.mjs); `npm test` fails while this copy is stale.';

const clone = (value) => structuredClone(value);

/** `{ title, required: [field], not?: { properties: { field: { maxItems: 0 } } } }` as the property schemas that branch narrows. */
function branchNarrowing(branch, where) {
  const { title, required, not, ...rest } = branch;
  if (!Array.isArray(required) || Object.keys(rest).length > 0) {
    throw new Error(`${where}: a rule branch may hold only title, required and a "non-empty array" not; found ${JSON.stringify(branch)}`);
  }
  const narrowed = {};
  for (const [field, schema] of Object.entries(not?.properties ?? {})) {
    if (Object.keys(schema).join() !== 'maxItems' || schema.maxItems !== 0) throw new Error(`${where}: unsupported not on ${field}`);
    // not { maxItems: 0 } on an array is minItems: 1, which generators and fuzzers understand.
    narrowed[field] = { minItems: 1 };
  }
  return { title, required, narrowed };
}

/**
 * The schema that replaces one `allOf` + `unevaluatedProperties: false` schema: its object
 * branches merged into one object, multiplied out over its rule (`anyOf`) branches.
 */
function expand(name, schema, schemas) {
  const resolve = (branch) => (branch.$ref ? schemas[branch.$ref.split('/').pop()] : branch);
  const properties = {};
  const required = [];
  let rule = null;
  for (const branch of schema.allOf) {
    const target = resolve(branch);
    if (target.properties) {
      Object.assign(properties, clone(target.properties));
      required.push(...(target.required ?? []));
    } else if (Array.isArray(target.anyOf) && rule === null) {
      rule = { description: target.description, branches: target.anyOf.map((b, n) => branchNarrowing(b, `${name}.allOf (anyOf ${n})`)) };
    } else {
      throw new Error(`${name}: cannot publish this allOf branch: ${JSON.stringify(branch)}`);
    }
  }
  const head = Object.fromEntries(['title', 'description'].filter((key) => schema[key] !== undefined).map((key) => [key, schema[key]]));
  const object = (extraRequired = [], narrowed = {}) => ({
    type: 'object',
    additionalProperties: false,
    required: [...new Set([...required, ...extraRequired])],
    properties: Object.fromEntries(Object.entries(properties).map(([field, property]) => [field, narrowed[field] ? { ...property, ...narrowed[field] } : property])),
  });
  if (rule === null) return { schema: { ...head, ...object() }, branches: {} };
  // Each branch is a named schema (LeadInputWithEmail, ...): generators name their types after
  // it (orval would say LeadInputAnyOfTwo), and a reader sees which field each one requires.
  const pascal = (field) => field.split('_').map((word) => word[0].toUpperCase() + word.slice(1)).join('');
  const branches = Object.fromEntries(rule.branches.map(({ title, required: branchRequired, narrowed }) => [
    `${name}With${branchRequired.map(pascal).join('And')}`,
    { title: `${head.title ?? name} ${title}`, ...object(branchRequired, narrowed) },
  ]));
  return {
    schema: {
      ...head,
      ...(rule.description ? { description: [head.description, rule.description].filter(Boolean).join('\n') } : {}),
      anyOf: Object.keys(branches).map((branch) => ({ $ref: `#/components/schemas/${branch}` })),
    },
    branches,
  };
}

/** The published document's text, from the source document's text. */
export function publishedDocument(sourceText) {
  const document = parseDocument(sourceText);
  const schemas = document.getIn(SCHEMAS).toJSON();
  const expanded = Object.entries(schemas).filter(([, schema]) => schema.unevaluatedProperties === false && Array.isArray(schema.allOf));
  const node = (value) => document.createNode(value, { aliasDuplicateObjects: false });
  for (const [name, schema] of expanded) {
    const { schema: replacement, branches } = expand(name, schema, schemas);
    const pairs = document.getIn(SCHEMAS).items;
    const at = pairs.findIndex((pair) => pair.key.value === name);
    // Keep the comment written above the schema in the source.
    const value = node(replacement);
    value.commentBefore = pairs[at].value.commentBefore;
    pairs.splice(at, 1, document.createPair(name, value), ...Object.entries(branches).map(([branch, body]) => document.createPair(branch, node(body))));
  }
  // A rule only the expanded schemas used (ContactRequirement) is now spelt out in them: drop
  // it. The object schemas stay (LeadFields, IntakeSwitches): the code's types name them.
  const used = JSON.stringify(document.toJSON());
  for (const [, schema] of expanded) {
    for (const { $ref } of schema.allOf) {
      const ruleName = $ref?.split('/').pop();
      if (ruleName && !schemas[ruleName].properties && !used.includes(`"${$ref}"`)) document.deleteIn([...SCHEMAS, ruleName]);
    }
  }
  document.commentBefore = HEADER + (document.commentBefore ? `\n${document.commentBefore}` : '');
  return document.toString({ lineWidth: 0, singleQuote: true, flowCollectionPadding: false });
}

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
// tool reads: one object with every property and `additionalProperties: false`, and the
// rules across fields (the contact rule) under `allOf`, each branch naming the schema of the
// field it requires, so generators type it as a union (`{ email: string } | { phone: string }
// | ...`) intersected with the fields. Same payloads accepted and refused
// (test/openapi/openapi-published.test.ts); response schemas are untouched. The responses of
// a deprecated operation declare its Deprecation, Sunset and Link headers
// (scripts/deprecation-headers.mjs).
import { parseDocument } from 'yaml';
import { declareDeprecationHeaders } from './deprecation-headers.mjs';

const SCHEMAS = ['components', 'schemas'];
const HEADER = ' Built from openapi/openapi.yaml by scripts/generate-types.mjs (npm run generate); edit that\n'
  + ' file, not this one. Request bodies are expanded into plain objects here (see\n'
  + ' scripts/openapi-published.mjs); `npm test` fails while this copy is stale.';

/** A source rule branch, `{ title, required: [field], not?: { properties: { field: { maxItems: 0 } } } }`, checked. */
function ruleBranch(branch, where) {
  const { title, required, not, ...rest } = branch;
  if (!Array.isArray(required) || Object.keys(rest).length > 0) {
    throw new Error(`${where}: a rule branch may hold only title, required and a "non-empty array" not; found ${JSON.stringify(branch)}`);
  }
  for (const [field, schema] of Object.entries(not?.properties ?? {})) {
    if (Object.keys(schema).join() !== 'maxItems' || schema.maxItems !== 0) throw new Error(`${where}: unsupported not on ${field}`);
  }
  return { title, required, nonEmpty: Object.keys(not?.properties ?? {}) };
}

/**
 * The published form of a rule (an `anyOf` of bare `required` branches): each branch also
 * names the schema of the property it requires, taken from the object it is applied to,
 * without its description. Generators type a branch from its `properties` (a bare `required`
 * becomes `unknown`); `not { maxItems: 0 }` becomes `minItems: 1`, which generators and
 * fuzzers understand where they cannot spell out a `not`.
 */
function publishedRule(name, rule, properties) {
  return {
    ...rule,
    anyOf: rule.anyOf.map((branch, n) => {
      const { title, required, nonEmpty } = ruleBranch(branch, `${name}.anyOf[${n}]`);
      const named = Object.fromEntries(required.map((field) => {
        if (!properties[field]) throw new Error(`${name}.anyOf[${n}] requires ${field}, which the object it applies to does not define`);
        const { description: _description, ...schema } = properties[field];
        return [field, nonEmpty.includes(field) ? { ...schema, minItems: 1 } : schema];
      }));
      return { ...(title ? { title } : {}), required, properties: named };
    }),
  };
}

/**
 * The published forms of one `allOf` + `unevaluatedProperties: false` schema: one object with
 * the properties and `required` of its object branches and `additionalProperties: false`,
 * and its rule branches (`$ref`s to an `anyOf` without properties) kept under `allOf`, each
 * with the published form of the rule it names.
 */
function expand(name, schema, schemas) {
  const properties = {};
  const required = [];
  const rules = {};
  for (const branch of schema.allOf) {
    const targetName = branch.$ref?.split('/').pop();
    const target = targetName ? schemas[targetName] : branch;
    if (target.properties) {
      Object.assign(properties, structuredClone(target.properties));
      required.push(...(target.required ?? []));
    } else if (targetName && Array.isArray(target.anyOf)) {
      rules[targetName] = target;
    } else {
      throw new Error(`${name}: cannot publish this allOf branch (an object, or a $ref to an anyOf rule): ${JSON.stringify(branch)}`);
    }
  }
  const { allOf: _allOf, unevaluatedProperties: _unevaluated, ...rest } = schema;
  const ruleNames = Object.keys(rules);
  return {
    schema: {
      ...rest,
      type: 'object',
      additionalProperties: false,
      ...(required.length > 0 ? { required } : {}),
      properties,
      ...(ruleNames.length > 0 ? { allOf: ruleNames.map((rule) => ({ $ref: `#/components/schemas/${rule}` })) } : {}),
    },
    rules: Object.fromEntries(ruleNames.map((rule) => [rule, publishedRule(rule, rules[rule], properties)])),
  };
}

/** The published document's text, from the source document's text. */
export function publishedDocument(sourceText) {
  const document = parseDocument(sourceText);
  const schemas = document.getIn(SCHEMAS).toJSON();
  const expanded = Object.entries(schemas).filter(([, schema]) => schema.unevaluatedProperties === false && Array.isArray(schema.allOf));
  const node = (value) => document.createNode(value, { aliasDuplicateObjects: false });
  const replace = (name, value) => {
    const replacement = node(value);
    // Keep the comment written above the schema in the source.
    replacement.commentBefore = document.getIn([...SCHEMAS, name]).commentBefore;
    document.setIn([...SCHEMAS, name], replacement);
  };
  const publishedRules = {};
  for (const [name, schema] of expanded) {
    const { schema: replacement, rules } = expand(name, schema, schemas);
    replace(name, replacement);
    for (const [rule, published] of Object.entries(rules)) {
      // One rule, one published form: every schema that applies it must define its fields alike.
      if (publishedRules[rule] && JSON.stringify(publishedRules[rule]) !== JSON.stringify(published)) {
        throw new Error(`${rule} is applied to objects whose contact fields differ (${name} and an earlier one)`);
      }
      publishedRules[rule] = published;
    }
  }
  for (const [rule, published] of Object.entries(publishedRules)) replace(rule, published);
  declareDeprecationHeaders(document);
  document.commentBefore = HEADER + (document.commentBefore ? `\n${document.commentBefore}` : '');
  return document.toString({ lineWidth: 0, singleQuote: true, flowCollectionPadding: false });
}

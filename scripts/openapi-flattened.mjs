// Writes an equivalent copy of openapi/openapi.yaml for tools that cannot generate data for
// `allOf` + `unevaluatedProperties: false` (Schemathesis 4.25's generator gives up on it):
// each such schema becomes one object with the properties and `required` of its object
// branches and `additionalProperties: false`; other branches (the contact rule) stay in
// `allOf`. Same accepted payloads, so the service can be fuzzed from its own document.
//   node scripts/openapi-flattened.mjs <output.yaml>
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const document = parse(readFileSync(path.join(root, 'openapi', 'openapi.yaml'), 'utf8'));
const schemas = document.components.schemas;
const target = (branch) => (branch.$ref ? schemas[branch.$ref.split('/').pop()] : branch);

for (const schema of Object.values(schemas)) {
  if (schema.unevaluatedProperties !== false || !Array.isArray(schema.allOf)) continue;
  const properties = {};
  const required = [];
  const rules = [];
  for (const branch of schema.allOf) {
    const resolved = target(branch);
    if (resolved.properties) {
      Object.assign(properties, resolved.properties);
      required.push(...(resolved.required ?? []));
    } else {
      rules.push(branch);
    }
  }
  delete schema.unevaluatedProperties;
  schema.allOf = rules;
  if (rules.length === 0) delete schema.allOf;
  Object.assign(schema, { type: 'object', additionalProperties: false, properties, ...(required.length > 0 ? { required } : {}) });
}
writeFileSync(process.argv[2] ?? path.join(root, 'openapi-flattened.yaml'), stringify(document, { lineWidth: 0 }));

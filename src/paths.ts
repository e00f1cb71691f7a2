import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// This file runs from src/ (tsx, jest) or from dist/src/ (compiled).
export const PROJECT_ROOT = path.resolve(here, here.split(path.sep).includes('dist') ? '../..' : '..');

// The hand-written contract, the file a person edits: routes are bound from it, and the
// request validator reads it because its error mapping (src/http/validation-errors.ts) is
// written for this composition (allOf + unevaluatedProperties, the contact rule as anyOf).
export const OPENAPI_PATH = path.join(PROJECT_ROOT, 'openapi', 'openapi.yaml');
// The same contract with its request bodies spelt out as plain objects, built from the one
// above by `npm run generate`: served at /openapi.yaml, rendered at /docs, mocked by Prism,
// the source of generated/api.ts. It accepts exactly the same requests (test/openapi/openapi-published.test.ts).
export const PUBLISHED_OPENAPI_PATH = path.join(PROJECT_ROOT, 'openapi', 'openapi.published.yaml');

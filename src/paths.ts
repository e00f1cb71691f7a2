import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// This file runs from src/ (tsx, jest) or from dist/src/ (compiled).
export const PROJECT_ROOT = path.resolve(here, here.split(path.sep).includes('dist') ? '../..' : '..');

// The contract, read by the request validator, served at /openapi.yaml and rendered at /docs.
export const OPENAPI_PATH = path.join(PROJECT_ROOT, 'openapi', 'openapi.yaml');

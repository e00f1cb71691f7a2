// The one place that says how the built files follow from openapi/openapi.yaml (the file a
// person edits):
//   openapi/openapi.published.yaml  the document the service serves, Prism mocks and clients
//                                   generate from (scripts/openapi-published.mjs says how)
//   generated/api.ts                openapi-typescript's types, from the published document,
//                                   so the service and the client type what integrators see
//   generated/limits.ts             the limits the published document states, as values
//                                   (scripts/document-limits.mjs says which)
//   node scripts/generate-types.mjs          rewrites all three (npm run generate)
//   node scripts/generate-types.mjs --check  fails when any is stale (npm test)
// openapi-typescript options, for clients as much as for the service:
//   --default-non-nullable false  a request property with a `default` stays optional
//                                 (`on_duplicate`, `dry_run`, ...), as the server fills it in
//   --enum-values                 enums are also exported as arrays (`onDuplicateValues`)
//   --root-types(-no-schema-prefix)  every schema is a named export (`Lead`, `LeadFields`)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { limitsModule } from './document-limits.mjs';
import { publishedDocument } from './openapi-published.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OPTIONS = ['--default-non-nullable', 'false', '--enum-values', '--root-types', '--root-types-no-schema-prefix'];
const SOURCE = path.join(root, 'openapi', 'openapi.yaml');
const TARGETS = {
  published: path.join(root, 'openapi', 'openapi.published.yaml'),
  types: path.join(root, 'generated', 'api.ts'),
  limits: path.join(root, 'generated', 'limits.ts'),
};

/** Writes the built files into `outputs` ({ published, types, limits } paths). */
function generate(outputs) {
  const published = publishedDocument(readFileSync(SOURCE, 'utf8'));
  writeFileSync(outputs.published, published);
  writeFileSync(outputs.limits, limitsModule(published));
  const cli = path.join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
  execFileSync(process.execPath, [cli, outputs.published, '-o', outputs.types, ...OPTIONS], { stdio: ['ignore', 'ignore', 'inherit'] });
}

if (!process.argv.includes('--check')) {
  generate(TARGETS);
  process.stderr.write('openapi/openapi.published.yaml, generated/api.ts and generated/limits.ts written.\n');
} else {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'generated-check-'));
  try {
    const fresh = { published: path.join(dir, 'openapi.published.yaml'), types: path.join(dir, 'api.ts'), limits: path.join(dir, 'limits.ts') };
    generate(fresh);
    const stale = Object.keys(TARGETS).filter((key) => readFileSync(fresh[key], 'utf8') !== readFileSync(TARGETS[key], 'utf8'));
    if (stale.length > 0) {
      process.stderr.write(`${stale.map((key) => path.relative(root, TARGETS[key])).join(' and ')} stale: run \`npm run generate\` and commit the result.\n`);
      process.exit(1);
    }
    process.stderr.write('openapi/openapi.published.yaml, generated/api.ts and generated/limits.ts are up to date.\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

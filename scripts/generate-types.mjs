// The one place that says how generated/api.ts is made from openapi/openapi.yaml.
//   node scripts/generate-types.mjs          rewrites generated/api.ts (npm run generate)
//   node scripts/generate-types.mjs --check  fails when generated/api.ts is stale (npm test)
// Options, for clients as much as for the service:
//   --default-non-nullable false  a request property with a `default` stays optional
//                                 (`on_duplicate`, `dry_run`, ...), as the server fills it in
//   --enum-values                 enums are also exported as arrays (`onDuplicateValues`)
//   --root-types(-no-schema-prefix)  every schema is a named export (`Lead`, `LeadFields`)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OPTIONS = ['--default-non-nullable', 'false', '--enum-values', '--root-types', '--root-types-no-schema-prefix'];
const TARGET = path.join(root, 'generated', 'api.ts');

function generate(output) {
  const cli = path.join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
  execFileSync(process.execPath, [cli, path.join(root, 'openapi', 'openapi.yaml'), '-o', output, ...OPTIONS], { stdio: ['ignore', 'ignore', 'inherit'] });
}

if (!process.argv.includes('--check')) {
  generate(TARGET);
  process.stderr.write('generated/api.ts written.\n');
} else {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'generated-check-'));
  try {
    const fresh = path.join(dir, 'api.ts');
    generate(fresh);
    if (readFileSync(fresh, 'utf8') !== readFileSync(TARGET, 'utf8')) {
      process.stderr.write('generated/api.ts is stale: run `npm run generate` and commit the result.\n');
      process.exit(1);
    }
    process.stderr.write('generated/api.ts is up to date.\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

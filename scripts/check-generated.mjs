// Fails when generated/api.ts is not what openapi-typescript makes of openapi/openapi.yaml
// today: edit the spec, run `npm run generate`, commit both.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const dir = mkdtempSync(path.join(os.tmpdir(), 'generated-check-'));
try {
  const fresh = path.join(dir, 'api.ts');
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), path.join(root, 'openapi', 'openapi.yaml'), '-o', fresh], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (readFileSync(fresh, 'utf8') !== readFileSync(path.join(root, 'generated', 'api.ts'), 'utf8')) {
    process.stderr.write('generated/api.ts is stale: run `npm run generate` and commit the result.\n');
    process.exit(1);
  }
  process.stderr.write('generated/api.ts is up to date.\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// Builds the package: ES modules (dist/esm) and CommonJS (dist/cjs), each with declarations.
// `npm pack` runs it (prepack). Run from this folder or with `npm run build -w lead-intake-client`.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(path.join(here, 'dist'), { recursive: true, force: true });
for (const project of ['tsconfig.json', 'tsconfig.cjs.json']) {
  execFileSync(process.execPath, [tsc, '-p', path.join(here, project)], { stdio: 'inherit' });
}
// The package is "type": "module"; this marks the CommonJS build as what it is.
writeFileSync(path.join(here, 'dist', 'cjs', 'package.json'), '{ "type": "commonjs" }\n');

// `npm start` / `npm run cli` build first, but only when a source file is newer than the
// last build, so repeated CLI calls stay fast. Output goes to stderr: the CLI owns stdout.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { build, BUILD_STAMP, CLI_BUNDLE, ROOT } from './build.mjs';

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    // The client package's own build output and installs (src/client/) are not the service's sources.
    if (entry.isDirectory() && (entry.name === 'dist' || entry.name === 'node_modules')) continue;
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

const sources = ['src', 'generated'].map((dir) => newestMtime(path.join(ROOT, dir)));
const settings = ['tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs'].map((file) => statSync(path.join(ROOT, file)).mtimeMs);
const inputs = Math.max(...sources, ...settings);
// A build from before the CLI was bundled has a stamp but no bundle.
if (!existsSync(BUILD_STAMP) || !existsSync(CLI_BUNDLE) || statSync(BUILD_STAMP).mtimeMs < inputs) {
  process.stderr.write('Building (tsc, then the CLI bundle)...\n');
  await build();
}

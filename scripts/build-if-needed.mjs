// `npm start` / `npm run cli` build first, but only when a source file is newer than the
// last build, so repeated CLI calls stay fast. Output goes to stderr: the CLI owns stdout.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleCli, CLI_BUNDLE } from './bundle-cli.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const stamp = path.join(root, 'dist', '.build-stamp');

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

const sources = ['src', 'generated'].map((dir) => newestMtime(path.join(root, dir)));
const settings = ['tsconfig.json', 'tsconfig.build.json', 'scripts/bundle-cli.mjs'].map((file) => statSync(path.join(root, file)).mtimeMs);
const inputs = Math.max(...sources, ...settings);
// A build from before the CLI was bundled has a stamp but no bundle.
if (!existsSync(stamp) || !existsSync(CLI_BUNDLE) || statSync(stamp).mtimeMs < inputs) {
  process.stderr.write('Building (tsc, then the CLI bundle)...\n');
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: ['ignore', 2, 2] });
  await bundleCli();
  writeFileSync(stamp, new Date().toISOString());
}

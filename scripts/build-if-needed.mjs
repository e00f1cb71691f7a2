// `npm start` / `npm run cli` build first, but only when a source file is newer than the
// last build, so repeated CLI calls stay fast. Output goes to stderr: the CLI owns stdout.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

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
const inputs = Math.max(...sources, statSync(path.join(root, 'tsconfig.json')).mtimeMs, statSync(path.join(root, 'tsconfig.build.json')).mtimeMs);
if (!existsSync(stamp) || statSync(stamp).mtimeMs < inputs) {
  process.stderr.write('Building (tsc)...\n');
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: ['ignore', 2, 2] });
  writeFileSync(stamp, new Date().toISOString());
}

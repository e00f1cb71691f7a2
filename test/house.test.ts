import { describe, expect, it } from '@jest/globals';
import { parseCircular, parseDependencyTree } from 'dpdm';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// House rules that hold for the whole of src/ (docs/architecture.md): no import cycle, not
// even through `import type`, and no file over 250 lines.

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..');
const MAX_LINES = 250;

/** Every file of src/ as a path from the repository root, build output and installs left out. */
const sourceFiles = (readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true }))
  .filter((entry) => entry.isFile())
  .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)))
  .filter((file) => !file.split(path.sep).some((part) => part === 'dist' || part === 'node_modules'))
  .sort();

describe('the house', () => {
  it('has no import cycle in src/, type-only imports included', async () => {
    // dpdm reads each file with the TypeScript parser and, without `transform`, keeps the
    // imports that only name types. It resolves `./x.js` to `./x.ts` through tsconfig.json
    // (found in `context`), and takes its entries relative to the working directory.
    const entries = sourceFiles.filter((file) => file.endsWith('.ts')).map((file) => path.relative(process.cwd(), path.join(ROOT, file)));
    const tree = await parseDependencyTree(entries, { context: ROOT, transform: false, skipDynamicImports: false });
    expect(Object.keys(tree).filter((file) => file.startsWith('src/')).length).toBeGreaterThanOrEqual(entries.length);
    expect(parseCircular(tree).map((cycle) => cycle.join(' -> '))).toEqual([]);
  }, 60_000);

  it(`has no file in src/ over ${MAX_LINES} lines`, () => {
    expect(sourceFiles.length).toBeGreaterThan(0);
    const lineCount = (file: string) => readFileSync(path.join(ROOT, file), 'utf8').replace(/\n$/, '').split('\n').length;
    const tooLong = sourceFiles.map((file) => ({ file, lines: lineCount(file) })).filter(({ lines }) => lines > MAX_LINES);
    expect(tooLong).toEqual([]);
  });
});

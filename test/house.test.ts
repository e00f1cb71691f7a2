import { beforeAll, describe, expect, it } from '@jest/globals';
import { parseCircular, parseDependencyTree, type DependencyTree } from 'dpdm';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { layerOf, mayImport, readFeatureOrder, readLayerTable } from './support/layer-table.js';

// House rules that hold for the whole of src/ (docs/architecture.md): no import cycle, not
// even through `import type`, every import allowed by the "Who may import whom" table, none
// running back up "Which feature builds on which", the outbox written only by src/outbox/,
// and no file over 250 lines.

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..');
const MAX_LINES = 250;

/** Every file of src/ as a path from the repository root, build output and installs left out. */
const sourceFiles = readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile())
  .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)))
  .filter((file) => !file.split(path.sep).some((part) => part === 'dist' || part === 'node_modules'))
  .sort();

/** Every import of src/, type-only ones included, as dpdm reads them. */
async function importTree(): Promise<DependencyTree> {
  // dpdm reads each file with the TypeScript parser and, without `transform`, keeps the
  // imports that only name types. It resolves `./x.js` to `./x.ts` through tsconfig.json
  // (found in `context`), and takes its entries relative to the working directory.
  const entries = sourceFiles.filter((file) => file.endsWith('.ts')).map((file) => path.relative(process.cwd(), path.join(ROOT, file)));
  const tree = await parseDependencyTree(entries, { context: ROOT, transform: false, skipDynamicImports: false });
  expect(Object.keys(tree).filter((file) => file.startsWith('src/')).length).toBeGreaterThanOrEqual(entries.length);
  return tree;
}

describe('the house', () => {
  let tree: DependencyTree;
  beforeAll(async () => {
    tree = await importTree();
  }, 60_000);

  it('has no import cycle in src/, type-only imports included', () => {
    expect(parseCircular(tree).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('imports only as the layer table of docs/architecture.md allows, and every file of src/ is in one of its layers', () => {
    const layers = readLayerTable(ROOT);
    expect(layers.map((layer) => layer.name)).toContain('repositories');
    const fromRoot = (file: string) => path.relative(ROOT, path.resolve(process.cwd(), file));
    const typescript = sourceFiles.filter((file) => file.endsWith('.ts'));
    expect(typescript.filter((file) => !layerOf(layers, file))).toEqual([]);
    const refused = Object.entries(tree)
      .filter(([file]) => fromRoot(file).startsWith('src/'))
      .flatMap(([file, imports]) =>
        (imports ?? []).flatMap((imported) => {
          if (!imported.id) return [];
          const from = fromRoot(file);
          const to = fromRoot(imported.id);
          if (!/^(src|generated)\//.test(to) || to.includes('node_modules')) return [];
          return mayImport(layers, from, to) ? [] : [`${from} (${layerOf(layers, from)?.name}) -> ${to} (${layerOf(layers, to)?.name ?? 'no layer'})`];
        }),
      );
    expect(refused).toEqual([]);
  });

  it('has no import running back up the feature order of docs/architecture.md, and every folder of src/ in it or named outside it', () => {
    const { order, outside } = readFeatureOrder(ROOT);
    expect(order.length).toBeGreaterThan(10);
    const folders = readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `src/${entry.name}/`);
    expect(folders.filter((folder) => !order.includes(folder) && !outside.includes(folder))).toEqual([]);
    const rank = (file: string) => order.findIndex((folder) => file.startsWith(folder));
    const fromRoot = (file: string) => path.relative(ROOT, path.resolve(process.cwd(), file));
    const upwards = Object.entries(tree).flatMap(([file, imports]) => {
      const from = fromRoot(file);
      return (imports ?? []).flatMap((imported) => {
        const to = imported.id ? fromRoot(imported.id) : '';
        const [below, above] = [rank(from), rank(to)];
        return below >= 0 && above >= 0 && above < below ? [`${from} (${order[below]}) -> ${to} (${order[above]})`] : [];
      });
    });
    expect(upwards).toEqual([]);
  });

  it('writes the outbox table only from src/outbox/ (a statement of another feature composes its part from there)', () => {
    const writesOutbox = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+outbox\b|\.(insertInto|updateTable|deleteFrom|mergeInto)\(\s*'outbox\b/i;
    // Migrations made the table; src/queries/ is the SQL of the prepared statements, rendered from the code.
    const checked = sourceFiles.filter((file) => file.endsWith('.ts') && !file.startsWith(`src${path.sep}outbox${path.sep}`) && !file.includes(`${path.sep}migrations${path.sep}`));
    expect(checked.filter((file) => writesOutbox.test(readFileSync(path.join(ROOT, file), 'utf8')))).toEqual([]);
  });

  it(`has no file in src/ over ${MAX_LINES} lines`, () => {
    expect(sourceFiles.length).toBeGreaterThan(0);
    const lineCount = (file: string) => readFileSync(path.join(ROOT, file), 'utf8').replace(/\n$/, '').split('\n').length;
    // src/queries/ is written by `npm run queries` (each statement's SQL laid out line by line), not by hand.
    const written = sourceFiles.filter((file) => !file.startsWith(`src${path.sep}queries${path.sep}`));
    const tooLong = written.map((file) => ({ file, lines: lineCount(file) })).filter(({ lines }) => lines > MAX_LINES);
    expect(tooLong).toEqual([]);
  });
});

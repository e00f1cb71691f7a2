import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

// docs/architecture.md's "Who may import whom", read as rules. The table stays prose for its
// reader; only this much of it is taken literally:
// - `lives in` and `may import`: their backticked paths (from src/ unless they name
//   generated/ or openapi/; a trailing / is a folder, * one path segment) and, in plain text,
//   the name of another layer ("services", "repositories", ...) or "anything below";
// - `never`: its backticked paths, which win over a broader allowance;
// - a layer whose `may import` says "every layer may import it" is open to all, "every layer
//   above may import it" to the rows above it;
// - text in parentheses explains and is skipped.
// A file belongs to the row naming it most precisely (a file before a pattern before a
// folder, a deeper folder before its parent); a file may import anything of its own layer.
// Only imports of the project's own files (src/, generated/) are checked.

export interface Layer {
  name: string;
  livesIn: Pattern[];
  mayImport: Pattern[];
  mayImportLayers: string[];
  never: Pattern[];
}

interface Pattern {
  text: string;
  /** Higher is more precise. */
  precision: number;
  matches(file: string): boolean;
}

/** The backticked paths of a cell; a backticked name without / or . (`MatchKey`) is no path. */
const backticked = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '').filter((token) => /[/.]/.test(token));
const withoutAsides = (text: string) => {
  let previous: string;
  do {
    previous = text;
    text = text.replace(/\([^()]*\)/g, '');
  } while (text !== previous);
  return text;
};

function pattern(root: string, token: string): Pattern {
  const text = /^(src|generated|openapi)\//.test(token) ? token : `src/${token}`;
  if (text.endsWith('/')) {
    if (!existsSync(path.join(root, text))) throw new Error(`the layer table names ${token}, which is not a folder`);
    return { text, precision: text.split('/').length, matches: (file) => file.startsWith(text) };
  }
  if (text.includes('*')) {
    const regex = new RegExp(`^${text.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    return { text, precision: 100, matches: (file) => regex.test(file) };
  }
  if (!existsSync(path.join(root, text))) throw new Error(`the layer table names ${token}, which is not a file`);
  return { text, precision: 1000, matches: (file) => file === text };
}

/** The rows of the table, top (processes) to bottom (shared), each with its rules. */
export function readLayerTable(root: string): Layer[] {
  const doc = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
  const section = doc.split('## Who may import whom')[1]?.split('\n## ')[0];
  if (!section) throw new Error('docs/architecture.md has no "Who may import whom" section');
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2)
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )
    .map(([name = '', livesIn = '', mayImport = '', never = '']) => ({ name, livesIn, mayImport, never }));
  const names = rows.map((row) => row.name);
  const layerWord = (name: string) => new RegExp(`(^|[^\\w-])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^\\w-])`, 'i');
  return rows.map(({ name, livesIn, mayImport, never }, index) => {
    const allowed = withoutAsides(mayImport);
    const plain = allowed.replace(/`[^`]*`/g, ' ');
    const mayImportLayers = names.filter((other) => other !== name && layerWord(other).test(plain));
    if (/anything below/i.test(plain)) mayImportLayers.push(...names.slice(index + 1));
    mayImportLayers.push(
      ...rows
        .filter((row, below) => /every layer may import it/i.test(row.mayImport) || (below > index && /every layer above may import it/i.test(row.mayImport)))
        .map((row) => row.name),
    );
    return {
      name,
      livesIn: backticked(withoutAsides(livesIn)).map((token) => pattern(root, token)),
      mayImport: backticked(allowed).map((token) => pattern(root, token)),
      mayImportLayers,
      never: backticked(withoutAsides(never)).map((token) => pattern(root, token)),
    };
  });
}

/** The layer a file belongs to, or null when no row names it. */
export function layerOf(layers: readonly Layer[], file: string): Layer | null {
  let best: { layer: Layer; precision: number } | null = null;
  for (const layer of layers) {
    for (const where of layer.livesIn) {
      if (where.matches(file) && (!best || where.precision > best.precision)) best = { layer, precision: where.precision };
    }
  }
  return best?.layer ?? null;
}

/** Whether the table lets `from` import `to`: the most precise rule naming `to` decides, `never` on a tie. */
export function mayImport(layers: readonly Layer[], from: string, to: string): boolean {
  const source = layerOf(layers, from);
  const target = layerOf(layers, to);
  if (!source || !target) return false;
  if (source === target) return true;
  const precisionOf = (patterns: readonly Pattern[]) => Math.max(-1, ...patterns.filter((where) => where.matches(to)).map((where) => where.precision));
  const denied = precisionOf(source.never);
  const allowed = Math.max(source === target || source.mayImportLayers.includes(target.name) ? 0 : -1, precisionOf(source.mayImport));
  return allowed >= 0 && allowed > denied;
}

/**
 * docs/architecture.md's "Which feature builds on which": the feature folders of src/ top to
 * bottom (the backticked folders of its line joined by `>`), and the folders it names as
 * outside the order (the line starting "Outside it:").
 */
export function readFeatureOrder(root: string): { order: string[]; outside: string[] } {
  const doc = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
  const section = doc.split('## Which feature builds on which')[1]?.split('\n## ')[0];
  if (!section) throw new Error('docs/architecture.md has no "Which feature builds on which" section');
  const folders = (line: string | undefined) => backticked(withoutAsides(line ?? '')).map((token) => pattern(root, token).text);
  const lines = section.split('\n');
  return { order: folders(lines.find((line) => line.startsWith('`') && line.includes(' > '))), outside: folders(lines.find((line) => line.startsWith('Outside it:'))) };
}

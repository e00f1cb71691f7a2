// The released documents (openapi/released/<version>.yaml, one per release, each the published
// document as it was released) and the document the working tree would publish, for the
// compatibility gate (scripts/check-compat.mjs) and the release command (scripts/release.mjs).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { compareDocuments } from './openapi-compat.mjs';
import { publishedDocument } from './openapi-published.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SOURCE = path.join(ROOT, 'openapi', 'openapi.yaml');
export const RELEASED = path.join(ROOT, 'openapi', 'released');
export const CHANGELOG = path.join(ROOT, 'openapi', 'CHANGELOG.md');

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;
export const parseVersion = (version) => {
  const match = SEMVER.exec(version);
  if (!match) throw new Error(`not a version (major.minor.patch): ${version}`);
  return match.slice(1).map(Number);
};
const byVersion = (a, b) => {
  const [x, y] = [parseVersion(a), parseVersion(b)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
};

/** The last release: its version and its parsed document. */
export function latestRelease(directory = RELEASED) {
  const versions = readdirSync(directory)
    .filter((name) => name.endsWith('.yaml'))
    .map((name) => name.slice(0, -'.yaml'.length))
    .sort(byVersion);
  const version = versions.at(-1);
  if (!version) throw new Error(`no released document in ${path.relative(ROOT, directory)}`);
  return { version, file: path.join(directory, `${version}.yaml`), document: parse(readFileSync(path.join(directory, `${version}.yaml`), 'utf8')) };
}

/** The published document built from a source document (as `npm run generate` would write it), as text. */
export const builtDocument = (source = SOURCE) => publishedDocument(readFileSync(source, 'utf8'));

/** `YYYY-MM-DD` of today (UTC), or of `--today` when given, which decides whether a sunset has passed. */
export function todayFrom(argv) {
  const given = option(argv, '--today');
  if (given && !/^\d{4}-\d{2}-\d{2}$/.test(given)) throw new Error(`--today takes YYYY-MM-DD, not ${given}`);
  return given ?? new Date().toISOString().slice(0, 10);
}

export function option(argv, name) {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
}

/** The changes from the last release to the working document, with both. */
export function changesSinceRelease({ source = SOURCE, released = RELEASED, today }) {
  const release = latestRelease(released);
  const text = builtDocument(source);
  const current = parse(text);
  return { release, current, text, changes: compareDocuments(release.document, current, { today }) };
}

const LABELS = { breaking: 'BREAKING', added: 'added   ', changed: 'changed ' };
export const formatChange = ({ kind, location, message }) => `${LABELS[kind]} ${location}: ${message}`;

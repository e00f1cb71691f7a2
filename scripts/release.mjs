// npm run release: makes a release of the contract. It compares the document built from
// openapi/openapi.yaml with the last released one (the rules of scripts/openapi-compat.mjs),
// refuses a breaking change, picks the version by semantic versioning, sets `info.version` in
// openapi/openapi.yaml, rebuilds the published document and the types (npm run generate),
// keeps that document as openapi/released/<version>.yaml and adds the release's entry, one
// line per change, to openapi/CHANGELOG.md.
//   major  a new path version (`/api/v2/...` beside `/api/v1`): what a breaking change ships as
//   minor  something added (an operation, an optional input, a response field, a value)
//   patch  only compatible changes otherwise (a deprecation, a loosened input, a removal
//          after its sunset) or the documentation's words
//   --today DATE   the release date, which also judges sunsets (default: today, UTC)
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse } from 'yaml';
import { pathVersions } from './openapi-compat.mjs';
import { CHANGELOG, changesSinceRelease, formatChange, parseVersion, RELEASED, ROOT, SOURCE, todayFrom } from './contract-releases.mjs';

const today = todayFrom(process.argv.slice(2));
const { release, current, changes } = changesSinceRelease({ today });
const fail = (message) => {
  console.error(`release: ${message}`);
  process.exit(1);
};

const breaking = changes.filter((change) => change.kind === 'breaking');
if (breaking.length > 0) {
  fail(`refused: ${breaking.length} breaking change(s) since ${release.version}:\n${breaking.map((change) => `  ${formatChange(change)}`).join('\n')}\nShip a breaking change under a new path version (README, "Changing the contract").`);
}
const withoutVersion = (document) => ({ ...document, info: { ...document.info, version: undefined } });
const reworded = !isDeepStrictEqual(withoutVersion(release.document), withoutVersion(current));
const newPathVersion = pathVersions(current).some((version) => !pathVersions(release.document).includes(version));
const [major, minor, patch] = parseVersion(release.version);
let version;
if (newPathVersion) version = `${major + 1}.0.0`;
else if (changes.some((change) => change.kind === 'added')) version = `${major}.${minor + 1}.0`;
else if (changes.length > 0 || reworded) version = `${major}.${minor}.${patch + 1}`;
else fail(`nothing to release: the document is the one released as ${release.version}`);

// Only the one line changes, so the hand-written file keeps its layout and comments.
const source = readFileSync(SOURCE, 'utf8');
const versioned = source.replace(/^(info:\n(?:[ \t].*\n)*?[ \t]+version:[ \t]*).*$/m, `$1${version}`);
if (versioned === source || parse(versioned).info.version !== version) fail('could not find info.version in openapi/openapi.yaml');
writeFileSync(SOURCE, versioned);
execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'generate-types.mjs')], { stdio: 'inherit' });
const releasedFile = path.join(RELEASED, `${version}.yaml`);
writeFileSync(releasedFile, readFileSync(path.join(ROOT, 'openapi', 'openapi.published.yaml'), 'utf8'));

const SECTIONS = [
  ['added', 'Added'],
  ['changed', 'Changed'],
];
const lines = SECTIONS.flatMap(([kind, title]) => {
  const listed = changes.filter((change) => change.kind === kind);
  return listed.length === 0 ? [] : [`### ${title}`, '', ...listed.map((change) => `- \`${change.location}\`: ${change.message}`), ''];
});
const entry = [`## ${version} (${today})`, '', ...(lines.length > 0 ? lines : ['The documentation only; the contract is unchanged.', ''])].join('\n');
const changelog = existsSync(CHANGELOG) ? readFileSync(CHANGELOG, 'utf8') : '';
const firstEntry = changelog.indexOf('\n## ');
writeFileSync(CHANGELOG, firstEntry < 0 ? `${changelog.trimEnd()}\n\n${entry}` : `${changelog.slice(0, firstEntry + 1)}${entry}\n${changelog.slice(firstEntry + 1)}`);
console.log(`release: ${version} (was ${release.version}): ${path.relative(ROOT, releasedFile)} written, info.version set, openapi/CHANGELOG.md updated. Commit them.`);

// npm run check:compat: compares the document built from openapi/openapi.yaml with the last
// released one (openapi/released/), prints every change with its location and exits 1 when
// one would break an existing client, mock user or webhook receiver (the rules:
// scripts/openapi-compat.mjs). `npm test` runs it.
//   --source FILE     another source document (default openapi/openapi.yaml)
//   --released DIR    another folder of releases (default openapi/released)
//   --today DATE      the date sunsets are judged against (default: today, UTC)
import path from 'node:path';
import { changesSinceRelease, formatChange, option, ROOT, todayFrom } from './contract-releases.mjs';

const argv = process.argv.slice(2);
const source = option(argv, '--source');
const released = option(argv, '--released');
const { release, current, changes } = changesSinceRelease({
  ...(source ? { source: path.resolve(source) } : {}),
  ...(released ? { released: path.resolve(released) } : {}),
  today: todayFrom(argv),
});
const shown = path.relative(ROOT, release.file);
const breaking = changes.filter((change) => change.kind === 'breaking');
console.log(`check:compat: ${path.relative(ROOT, path.resolve(source ?? 'openapi/openapi.yaml'))} against ${shown}: ${changes.length === 0 ? 'no change to the contract' : `${changes.length} change(s), ${breaking.length} breaking`}`);
for (const change of changes) console.log(`  ${formatChange(change)}`);
let failed = breaking.length > 0;
if (current.info?.version !== release.version) {
  console.log(`  info.version is ${current.info?.version}, the last release ${release.version}: only \`npm run release\` sets it`);
  failed = true;
}
if (failed) {
  console.log(
    breaking.length > 0
      ? 'check:compat: FAILED: these changes break existing clients. Make the change compatible, or ship it under a new path version (README, "Changing the contract").'
      : 'check:compat: FAILED',
  );
  process.exit(1);
}

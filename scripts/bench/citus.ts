// `npm run bench -- --citus`: the bench's database on the Citus test cluster (a coordinator and
// two workers, from ../shared/tools/citus through scripts/citus/tools.sh), and its ratios
// printed beside the single server's last full run (bench/results.json).

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './support.js';

const run = (command: string, args: string[]) => execFileSync(command, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

export interface CitusCluster {
  /** The coordinator's postgres database. */
  url: string;
  /** A database with the extension on every node, the workers registered. */
  createDatabase(name: string): void;
  dropDatabase(name: string): void;
}

/** Boots the cluster (idempotent); throws when its tools are not there. */
export function citusCluster(): CitusCluster {
  let tools: string;
  try {
    tools = run(path.join(ROOT, 'scripts', 'citus', 'tools.sh'), []);
  } catch {
    throw new Error('--citus needs the Citus tools (../shared/tools/citus or $CITUS_TOOLS): scripts/citus/tools.sh found none');
  }
  const cluster = path.join(tools, 'cluster.sh');
  const url = run(cluster, ['up']);
  return {
    url,
    createDatabase: (name) => {
      run(cluster, ['createdb', name]);
    },
    dropDatabase: (name) => {
      try {
        run(cluster, ['dropdb', name]);
      } catch {
        /* already gone with the cluster */
      }
    },
  };
}

interface Results {
  date: string;
  targets: Record<string, { value: number | string | null }>;
}

/** Every target's value of this Citus run beside the single server's, as a table on stdout. */
export function reportBesideSingleServer(citusFile: string, singleFile: string): void {
  if (!existsSync(singleFile)) {
    process.stdout.write(`\nNo ${path.relative(ROOT, singleFile)} to compare with: run npm run bench first.\n`);
    return;
  }
  const single = JSON.parse(readFileSync(singleFile, 'utf8')) as Results;
  const distributed = JSON.parse(readFileSync(citusFile, 'utf8')) as Results;
  const rows = Object.keys(distributed.targets).map((name) => `| ${name} | ${single.targets[name]?.value ?? '—'} | ${distributed.targets[name]!.value ?? '—'} |`);
  process.stdout.write(
    `\nRatios and figures: single server (${single.date}) beside Citus, a coordinator and two workers (${distributed.date})\n\n` +
      `| target | single server | Citus |\n|---|---|---|\n${rows.join('\n')}\n`,
  );
}

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { group } from './workspace-admin.js';
import type { Db } from '../../db/connect.js';
import { leadsCsv, leadsJson } from '../../leads/export-service.js';
import type { ImportJob } from '../../lead-imports/repository.js';
import {
  createImport,
  DEFAULT_SWITCHES,
  describeColumns,
  importWriteGroups,
  jobSummary,
  mappingOf,
  previewImport,
  runDueImport,
  showImport,
  startImport,
} from '../../lead-imports/service.js';
import { Refused } from '../../refused.js';
import { findTagsByNames } from '../../tags/repository.js';
import { requireWorkspace } from '../../workspaces/service.js';
import { positiveId } from '../../input.js';
import { collect } from '../arguments.js';
import { runCommand, withCliContext } from '../cli-context.js';

interface ImportOptions {
  workspace: string;
  file: string;
  map: string[];
  onDuplicate?: string;
  dryRun?: boolean;
}

interface ListOptions {
  workspace: string;
  search?: string;
  tag?: string;
  format: string;
}

const CLI_LEASE_MS = 30_000;

/** The guessed mapping with each `--map COLUMN=field` applied; a column the file does not have is refused. */
async function mappingFrom(db: Db, job: ImportJob, pairs: readonly string[]) {
  const fields: Array<string | undefined> = (await describeColumns(db, job)).map((column) => column.guess);
  for (const pair of pairs) {
    const at = pair.lastIndexOf('=');
    const column = at > 0 ? pair.slice(0, at) : '';
    const index = job.columns.indexOf(column);
    if (index < 0) throw new Refused('invalid_argument', `--map ${pair}: the file has no column "${column}". Its columns: ${job.columns.join(', ')}.`);
    fields[index] = pair.slice(at + 1);
  }
  return mappingOf(job, fields);
}

function drawProgress(job: ImportJob): void {
  if (!process.stderr.isTTY) return;
  const width = 30;
  const filled = job.total === 0 ? width : Math.round((job.done / job.total) * width);
  process.stderr.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${job.done}/${job.total} ${job.status}`);
}

/** Runs the job here (claiming it as a worker does) until it ends; a running worker may take chunks of it too. */
async function waitForImport(db: Db, job: ImportJob, logger: Parameters<typeof importWriteGroups>[1]): Promise<ImportJob> {
  const groups = importWriteGroups(db, logger);
  const workerId = `cli:${randomUUID()}`;
  for (;;) {
    const current = await showImport(db, job.workspace_id, job.id);
    drawProgress(current);
    if (current.status === 'done' || current.status === 'cancelled') {
      if (process.stderr.isTTY) process.stderr.write('\n');
      return current;
    }
    const ran = await runDueImport(groups, db, job.workspace_id, workerId, CLI_LEASE_MS, () => false);
    if (ran === 0) await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

export function registerLeadCommands(program: Command): void {
  const lead = group(program, 'lead').description("Leads: CSV import, lists, and a person's data (erase, export)");
  lead
    .command('import')
    .description('imports a CSV file of leads through the batch path; prints the finished job')
    .requiredOption('--workspace <id>')
    .requiredOption('--file <path>')
    .option('--map <column=field>', 'what a column fills (repeatable); other columns are guessed from their headers', collect, [])
    .option('--on-duplicate <choice>', 'update, skip or error')
    .option('--dry-run', 'preview the first rows; nothing is saved')
    .action((options: ImportOptions) =>
      runCommand(async ({ db, logger }) => {
        const workspaceId = positiveId(options.workspace, '--workspace');
        await requireWorkspace(db, workspaceId);
        const onDuplicate = options.onDuplicate ?? 'update';
        if (onDuplicate !== 'update' && onDuplicate !== 'skip' && onDuplicate !== 'error') throw new Refused('invalid_argument', '--on-duplicate must be update, skip or error.');
        let bytes: Buffer;
        try {
          bytes = readFileSync(options.file);
        } catch {
          throw new Refused('invalid_argument', `--file: cannot read ${options.file}.`);
        }
        const switches = { ...DEFAULT_SWITCHES, on_duplicate: onDuplicate } as const;
        const job = await createImport(db, workspaceId, null, options.file.split('/').pop() ?? options.file, bytes);
        const mapping = await mappingFrom(db, job, options.map);
        if (options.dryRun) {
          const rows = await previewImport(importWriteGroups(db, logger), db, job, mapping, switches);
          return { ...jobSummary(job), dry_run: true, mapping, rows: rows.map(({ ord, status, error }) => ({ row: ord, status, error })) };
        }
        await startImport(db, job, mapping, switches);
        return { ...jobSummary(await waitForImport(db, job, logger)), mapping };
      }),
    );

  lead
    .command('list')
    .description('every lead matching the search and tag, newest first, as CSV or JSON on stdout')
    .requiredOption('--workspace <id>')
    .option('--search <text>', 'any part of a name, email, phone, company name or domain')
    .option('--tag <name>')
    .requiredOption('--format <format>', 'csv or json')
    .action(async (options: ListOptions) => {
      if (options.format !== 'csv' && options.format !== 'json') throw new Refused('invalid_argument', '--format must be csv or json.');
      await withCliContext(async ({ db }) => {
        const workspaceId = positiveId(options.workspace, '--workspace');
        await requireWorkspace(db, workspaceId);
        let tagId: number | undefined;
        if (options.tag !== undefined) {
          const [tag] = await findTagsByNames(db, workspaceId, [options.tag]);
          if (!tag) throw new Refused('not_found', `--tag: there is no tag "${options.tag}" in workspace ${workspaceId}.`);
          tagId = Number(tag.id);
        }
        const filter = { search: options.search, tagId };
        for await (const chunk of options.format === 'csv' ? leadsCsv(db, workspaceId, filter) : leadsJson(db, workspaceId, filter)) {
          if (!process.stdout.write(chunk)) await new Promise((resolve) => process.stdout.once('drain', resolve));
        }
      });
    });
}

import { stringify } from 'csv-stringify/sync';
import type { BatchRequest, BatchRowResult, LeadInput } from '../../generated/api.js';
import type { Db } from '../db/connect.js';
import { createLeadsBatch } from '../leads/intake/intake-service.js';
import { runGroupTransaction } from '../leads/intake/executor.js';
import { suppressionScreen } from '../leads/suppression-screen.js';
import { WriteGroups } from '../leads/intake/write-groups.js';
import { FairSlots } from '../db/fair-slots.js';
import type { Logger } from 'pino';
import { Refused } from '../refused.js';
import { DELIMITERS, readCsvFile, type Delimiter } from './csv-file.js';

export { IMPORT_MAX_BYTES, IMPORT_MAX_ROWS } from './csv-file.js';
export { IMPORT_FIELDS } from './fields.js';
import { checkMapping, guessField, isImportField, leadInputError, leadOf, type ImportField, type Mapping } from './fields.js';
import {
  cancelImport as cancelJob,
  claimImport,
  findImport,
  importRows,
  insertImport,
  queueImport,
  recordChunk,
  type ImportJob,
  type ImportSwitches,
  type RowResult,
} from './repository.js';

// CSV imports of leads: a file is read whole and kept as its rows (nothing is kept when it is
// refused), mapped to the API's lead fields, previewed as a dry run of its first rows, then
// run by the worker in chunks through POST /leads/batch's own service: the same checks,
// deduplication, triggers and outbox as the API. A chunk is sent with an Idempotency-Key of
// its own (the job and its first row), so a chunk sent again after a worker restart gets its
// stored answer back and no row is written twice. A row that fails is a failed row, never a
// failed job.

/**
 * Rows per batch call. Larger than the batch operation's limit of 100 (a limit on what one HTTP
 * request may hold, not on the service): a chunk's round trips (screening, claim, lookup,
 * statements, answer, its record) are paid once per chunk, and its rows are written by the same
 * set statements whatever their number.
 */
export const IMPORT_CHUNK = 1000;
/**
 * Chunks of one job in flight at once: a chunk waits on its round trips and commit, so a few at
 * a time keep the database busy (the intake is race-safe for the same person in two).
 */
export const IMPORT_CHUNKS_AT_ONCE = 3;
export const PREVIEW_ROWS = 100;
/** Import chunks' Idempotency-Keys belong to no API key (migration 0020). */
const IMPORTS_KEY_ID = 0;

export const DEFAULT_SWITCHES: ImportSwitches = { on_duplicate: 'update', create_missing_tags: true, enrich: true, tags: [] };

/**
 * The write groups an import's chunks run through when the process has none of its own (the
 * worker, the CLI): each chunk is a batch call, which runs alone on one connection at a time.
 */
export function importWriteGroups(db: Db, logger: Logger): WriteGroups {
  return new WriteGroups((requests, commits) => runGroupTransaction(db, requests, logger, { commits }), logger, {
    queueLimit: 1,
    slots: new FairSlots<number>(IMPORT_CHUNKS_AT_ONCE, IMPORT_CHUNKS_AT_ONCE),
    groupRan: () => {},
  });
}

/** Reads the file and keeps it as a job waiting for its mapping; refuses it whole. */
export async function createImport(db: Db, workspaceId: number, createdBy: number | null, fileName: string, bytes: Buffer): Promise<ImportJob> {
  const file = readCsvFile(bytes);
  const id = await db
    .transaction()
    .execute((trx) => insertImport(trx, { workspaceId, createdBy, fileName: fileName.slice(0, 255) || 'import.csv', delimiter: file.delimiter, columns: file.columns }, file.rows));
  return (await findImport(db, workspaceId, id))!;
}

export async function showImport(db: Db, workspaceId: number, id: number): Promise<ImportJob> {
  const job = await findImport(db, workspaceId, id);
  if (!job) throw new Refused('not_found', `There is no import ${id} in this workspace.`);
  return job;
}

export const delimiterName = (job: ImportJob) => DELIMITERS[job.delimiter as Delimiter] ?? job.delimiter;

/** Each column with its first values and the field guessed from its header. */
export async function describeColumns(db: Db, job: ImportJob): Promise<Array<{ name: string; samples: string[]; guess: ImportField }>> {
  const first = await importRows(db, job.workspace_id, job.id, { after: 0, limit: 3, pendingOnly: false });
  return job.columns.map((name, index) => ({ name, samples: first.map((row) => row.fields[index] ?? ''), guess: guessField(name) }));
}

/** A mapping given as one field per column; unknown fields are refused by name. */
export function mappingOf(job: ImportJob, fields: ReadonlyArray<string | undefined>): Mapping {
  return job.columns.map((column, index) => {
    const field = fields[index] ?? 'ignore';
    if (!isImportField(field)) throw new Refused('invalid_argument', `Column "${column}": "${field}" is not a lead field an import can fill.`);
    return field;
  });
}

/** What the chunk's rows become: a failed row for each row the contract refuses, the batch's answer for the rest. */
async function runRows(
  groups: WriteGroups,
  db: Db,
  job: ImportJob,
  mapping: Mapping,
  switches: ImportSwitches,
  rows: ReadonlyArray<{ ord: number; fields: string[] }>,
  dryRun: boolean,
) {
  const results = new Map<number, RowResult>();
  const sent: Array<{ ord: number; lead: LeadInput }> = [];
  for (const row of rows) {
    const lead = leadOf(job.columns, mapping, row.fields, switches.tags);
    const error = leadInputError(lead);
    if (error) results.set(row.ord, { ord: row.ord, status: 'failed', lead_id: null, error });
    else sent.push({ ord: row.ord, lead });
  }
  if (sent.length > 0) {
    const request: BatchRequest = {
      leads: sent.map((row) => row.lead),
      on_duplicate: switches.on_duplicate,
      create_missing_tags: switches.create_missing_tags,
      enrich: switches.enrich,
      dry_run: dryRun,
    };
    const key = dryRun ? undefined : `lead-import:${job.id}:${sent[0]!.ord}`;
    const caller = { workspaceId: job.workspace_id, apiKeyId: IMPORTS_KEY_ID, hasSuppressionList: true, leadSource: 'import' as const };
    const answer = await createLeadsBatch(groups, suppressionScreen(db), caller, request, { key, bodyAsSent: request });
    answer.body.data.forEach((row: BatchRowResult, index) => {
      const { ord } = sent[index]!;
      results.set(ord, {
        ord,
        status: row.status,
        lead_id: row.status === 'failed' ? null : (row.lead_id ?? null),
        error: row.status === 'failed' ? (row.error ?? 'failed') : null,
      });
    });
  }
  return rows.map((row) => results.get(row.ord)!);
}

/** The first rows as a dry run: what each would do. */
export async function previewImport(groups: WriteGroups, db: Db, job: ImportJob, mapping: Mapping, switches: ImportSwitches) {
  checkMapping(mapping);
  const rows = await importRows(db, job.workspace_id, job.id, { after: 0, limit: PREVIEW_ROWS, pendingOnly: false });
  const results = await runRows(groups, db, job, mapping, switches, rows, true);
  return rows.map((row, index) => ({ ...results[index]!, fields: row.fields }));
}

/** Queues the job for the worker with its mapping and switches. */
export async function startImport(db: Db, job: ImportJob, mapping: Mapping, switches: ImportSwitches): Promise<void> {
  checkMapping(mapping);
  if (!(await queueImport(db, job.workspace_id, job.id, mapping, switches))) throw new Refused('conflict', `Import ${job.id} has already started.`);
}

export async function cancelImport(db: Db, workspaceId: number, id: number): Promise<void> {
  if (!(await cancelJob(db, workspaceId, id))) throw new Refused('conflict', `Import ${id} has already ended.`);
}

/**
 * A claimed job's runner: its first chunk alone, then a few chunks in flight, each lane taking
 * the next chunk not yet done as it finishes one, until the job ends, is cancelled, or
 * `stopped()` says to let go. The first chunk creates the companies and tags a file names again
 * and again (a new company with details is created by a row alone, which takes its name's lock):
 * chunks started beside it would run the same rows alone, waiting on its locks, where the chunks
 * after it find them and write every row set-based. Chunks are
 * fixed by row number (rows 1-1000, 1001-2000, ...) and recorded whole, so a chunk run again
 * after a restart is the same chunk under the same key.
 */
export async function runClaimedImport(groups: WriteGroups, db: Db, job: ImportJob, workerId: string, leaseMs: number, stopped: () => boolean): Promise<number> {
  const mapping = job.mapping as Mapping;
  const switches = job.switches!;
  const chunkOf = (ord: number) => Math.floor((ord - 1) / IMPORT_CHUNK);
  let after = 0;
  let ended = false;
  let ran = 0;
  // One read of the next chunk at a time, so each lane gets a chunk of its own.
  let reading: Promise<unknown> = Promise.resolve();
  const nextChunk = () => {
    const next = reading.then(async () => {
      const rows = await importRows(db, job.workspace_id, job.id, { after, limit: IMPORT_CHUNK, pendingOnly: true });
      if (rows.length === 0) return [];
      const chunk = chunkOf(rows[0]!.ord);
      after = (chunk + 1) * IMPORT_CHUNK;
      return rows.filter((row) => chunkOf(row.ord) === chunk);
    });
    reading = next.catch(() => {});
    return next;
  };
  const lane = async (chunks = Number.POSITIVE_INFINITY) => {
    for (let run = 0; run < chunks && !ended && !stopped(); run++) {
      const rows = await nextChunk();
      if (rows.length === 0) break;
      const results = await runRows(groups, db, job, mapping, switches, rows, false);
      const status = await recordChunk(db, job.workspace_id, job.id, workerId, leaseMs, results);
      ran += rows.length;
      if (status !== 'running') ended = true;
    }
  };
  await lane(1);
  const lanes = await Promise.allSettled(
    Array.from({ length: IMPORT_CHUNKS_AT_ONCE }, () =>
      lane().catch((error: unknown) => {
        ended = true;
        throw error;
      }),
    ),
  );
  const failed = lanes.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return ran;
}

/** Claims the workspace's next due import and runs it. */
export async function runDueImport(groups: WriteGroups, db: Db, workspaceId: number, workerId: string, leaseMs: number, stopped: () => boolean): Promise<number> {
  const job = await claimImport(db, workspaceId, workerId, leaseMs);
  return job ? runClaimedImport(groups, db, job, workerId, leaseMs, stopped) : 0;
}

const RESULT_PAGE = 1000;

/** The results as CSV: the input's columns, then status, lead id and error, a page of rows at a time. */
export async function* importResults(db: Db, job: ImportJob): AsyncGenerator<string> {
  yield stringify([[...job.columns, 'status', 'lead_id', 'error']], { bom: true });
  for (let after = 0; ; ) {
    const rows = await importRows(db, job.workspace_id, job.id, { after, limit: RESULT_PAGE, pendingOnly: false });
    if (rows.length === 0) return;
    yield stringify(rows.map((row) => [...row.fields, row.status ?? 'not run', row.lead_id ?? '', row.error ?? '']));
    after = rows.at(-1)!.ord;
  }
}

/** The job as the CLI prints it. */
export const jobSummary = (job: ImportJob) => {
  const { id, file_name, status, total, done, created, updated, skipped, failed, created_at, finished_at } = job;
  return { id, file_name, delimiter: delimiterName(job), status, total, done, created, updated, skipped, failed, created_at, finished_at };
};

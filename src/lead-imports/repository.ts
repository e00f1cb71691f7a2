import { sql } from 'kysely';
import type { Db, Executor } from '../db/connect.js';
import { jsonParameter } from '../db/sql.js';

// The statements of CSV imports (migration 0020): a job and its rows. Every statement names
// the job's workspace, so on Citus each runs on that workspace's node; only the search for
// workspaces with due imports spans them (docs/operations.md, "Citus").

export type ImportStatus = 'mapping' | 'queued' | 'running' | 'done' | 'cancelled';
export type RowStatus = 'created' | 'updated' | 'skipped' | 'failed';

export interface ImportSwitches {
  on_duplicate: 'update' | 'skip' | 'error';
  create_missing_tags: boolean;
  enrich: boolean;
  tags: string[];
}

export interface ImportJob {
  id: number;
  workspace_id: number;
  file_name: string;
  delimiter: string;
  columns: string[];
  mapping: string[] | null;
  switches: ImportSwitches | null;
  status: ImportStatus;
  total: number;
  done: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  created_at: string;
  finished_at: string | null;
}

export interface ImportRow {
  ord: number;
  fields: string[];
  status: RowStatus | null;
  lead_id: number | null;
  error: string | null;
}

export interface RowResult {
  ord: number;
  status: RowStatus;
  lead_id: number | null;
  error: string | null;
}

const JOB_COLUMNS = sql`id, workspace_id, file_name, delimiter, columns, mapping, switches, status, total, done, created, updated, skipped, failed, created_at, finished_at`;
/**
 * Rows of a file per INSERT: few enough that each statement's JSON parameter is a regular young
 * string (under V8's large-object size), which the next minor GC frees; a larger one is made in
 * the large-object space and stays in the service until its next full GC.
 */
const ROWS_PER_INSERT = 500;

/** A new job waiting for its mapping, with every row of its file (one statement per ROWS_PER_INSERT rows, in the caller's transaction). */
export async function insertImport(
  trx: Executor,
  job: { workspaceId: number; createdBy: number | null; fileName: string; delimiter: string; columns: string[] },
  rows: readonly string[][],
): Promise<number> {
  const { rows: inserted } = await sql<{ id: number }>`
    INSERT INTO lead_imports (workspace_id, created_by, file_name, delimiter, columns, total)
    VALUES (${job.workspaceId}, ${job.createdBy}, ${job.fileName}, ${job.delimiter}, ${jsonParameter(job.columns)}::jsonb, ${rows.length})
    RETURNING id::int AS id`.execute(trx);
  const id = inserted[0]!.id;
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const slice = rows.slice(start, start + ROWS_PER_INSERT);
    await sql`
      INSERT INTO lead_import_rows (workspace_id, import_id, ord, fields)
      SELECT ${job.workspaceId}, ${id}, r.ord::int + ${start}, r.fields
      FROM jsonb_array_elements(${jsonParameter(slice)}::jsonb) WITH ORDINALITY AS r(fields, ord)`.execute(trx);
  }
  return id;
}

export async function findImport(db: Executor, workspaceId: number, id: number): Promise<ImportJob | undefined> {
  const { rows } = await sql<ImportJob>`SELECT ${JOB_COLUMNS} FROM lead_imports WHERE workspace_id = ${workspaceId} AND id = ${id}`.execute(db);
  return rows[0];
}

/** Rows in file order from `after` (exclusive): all of them, or only those not yet done. */
export async function importRows(db: Executor, workspaceId: number, id: number, options: { after: number; limit: number; pendingOnly: boolean }): Promise<ImportRow[]> {
  const { rows } = await sql<ImportRow>`
    SELECT ord, fields, status, lead_id::int AS lead_id, error FROM lead_import_rows
    WHERE workspace_id = ${workspaceId} AND import_id = ${id} AND ord > ${options.after} ${options.pendingOnly ? sql`AND status IS NULL` : sql``}
    ORDER BY ord LIMIT ${options.limit}`.execute(db);
  return rows;
}

/** Queues a job that was waiting for its mapping; false when it no longer waits. */
export async function queueImport(db: Executor, workspaceId: number, id: number, mapping: readonly string[], switches: ImportSwitches): Promise<boolean> {
  const { numAffectedRows } = await sql`
    UPDATE lead_imports SET status = 'queued', mapping = ${jsonParameter(mapping)}::jsonb, switches = ${jsonParameter(switches)}::jsonb
    WHERE workspace_id = ${workspaceId} AND id = ${id} AND status = 'mapping'`.execute(db);
  return Number(numAffectedRows) === 1;
}

/** Cancels a job that has not ended; its rows already done stay done. */
export async function cancelImport(db: Executor, workspaceId: number, id: number): Promise<boolean> {
  const { numAffectedRows } = await sql`
    UPDATE lead_imports SET status = 'cancelled', finished_at = now()
    WHERE workspace_id = ${workspaceId} AND id = ${id} AND status IN ('mapping', 'queued', 'running')`.execute(db);
  return Number(numAffectedRows) === 1;
}

/** The workspaces with a queued or running import, after `after` first (the only statement across workspaces). */
export async function dueImportWorkspaces(db: Db, after: number, limit: number): Promise<number[]> {
  const { rows } = await sql<{ workspace_id: number }>`
    SELECT workspace_id::int AS workspace_id FROM lead_imports
    WHERE status IN ('queued', 'running') AND (locked_until IS NULL OR locked_until < now())
    GROUP BY workspace_id
    ORDER BY workspace_id <= ${after}, workspace_id LIMIT ${limit}`.execute(db);
  return rows.map((row) => row.workspace_id);
}

/** Claims the workspace's oldest queued or running import whose lease has run out (a worker that stopped), for `leaseMs`. */
export async function claimImport(db: Executor, workspaceId: number, workerId: string, leaseMs: number): Promise<ImportJob | undefined> {
  const { rows } = await sql<ImportJob>`
    UPDATE lead_imports AS j SET status = 'running', locked_by = ${workerId}, locked_until = now() + make_interval(secs => ${leaseMs / 1000})
    FROM (
      SELECT id FROM lead_imports
      WHERE workspace_id = ${workspaceId} AND status IN ('queued', 'running') AND (locked_until IS NULL OR locked_until < now())
      ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
    ) AS due
    WHERE j.workspace_id = ${workspaceId} AND j.id = due.id
    RETURNING ${sql.join(['id', 'workspace_id', 'file_name', 'delimiter', 'columns', 'mapping', 'switches', 'status', 'total', 'done', 'created', 'updated', 'skipped', 'failed', 'created_at', 'finished_at'].map((column) => sql.ref(`j.${column}`)))}`.execute(
    db,
  );
  return rows[0];
}

/** Thrown inside recordChunk's transaction to undo its rows' results when the job is no longer this worker's. */
const LEASE_LOST = Symbol('lease lost');

/**
 * Records what a chunk's rows became and adds them to the job's counts (its leads were created
 * with the source `import`); extends the lease, and ends the job after its last row. Nothing
 * when this worker no longer holds the job: returns the job's status then. The rows first and
 * the job's row last, so chunks recorded at once queue on the job's row only for its update and
 * the commit; the rows by their range of `ord` as well, so the plan reads the chunk's rows by
 * the primary key whatever the table's statistics say.
 */
export async function recordChunk(db: Db, workspaceId: number, id: number, workerId: string, leaseMs: number, results: readonly RowResult[]): Promise<ImportStatus | null> {
  const count = (status: RowStatus) => results.filter((result) => result.status === status).length;
  const ords = results.map((result) => result.ord);
  try {
    return await db.transaction().execute(async (trx) => {
      await sql`
        UPDATE lead_import_rows AS r SET status = x.status, lead_id = x.lead_id, error = x.error
        FROM jsonb_to_recordset(${jsonParameter(results)}::jsonb) AS x(ord int, status text, lead_id bigint, error text)
        WHERE r.workspace_id = ${workspaceId} AND r.import_id = ${id} AND r.ord BETWEEN ${Math.min(...ords)} AND ${Math.max(...ords)}
          AND r.ord = x.ord AND r.status IS NULL`.execute(trx);
      const { rows } = await sql<{ status: ImportStatus }>`
        UPDATE lead_imports SET done = done + ${results.length}, created = created + ${count('created')}, updated = updated + ${count('updated')},
          skipped = skipped + ${count('skipped')}, failed = failed + ${count('failed')},
          locked_until = now() + make_interval(secs => ${leaseMs / 1000}),
          status = CASE WHEN status = 'running' AND done + ${results.length} >= total THEN 'done' ELSE status END
        WHERE workspace_id = ${workspaceId} AND id = ${id} AND locked_by = ${workerId}
        RETURNING status`.execute(trx);
      if (rows.length === 0) throw LEASE_LOST;
      // Its own statement: Citus refuses now() inside CASE in a distributed UPDATE.
      if (rows[0]!.status === 'done') {
        await sql`UPDATE lead_imports SET finished_at = now() WHERE workspace_id = ${workspaceId} AND id = ${id} AND finished_at IS NULL`.execute(trx);
      }
      return rows[0]!.status;
    });
  } catch (error) {
    if (error === LEASE_LOST) return null;
    throw error;
  }
}

/** Lets go of the jobs a stopping worker holds: the next worker goes on from where they are without waiting for the lease. */
export async function releaseImportClaims(db: Executor, workerId: string): Promise<void> {
  await sql`UPDATE lead_imports SET locked_by = NULL, locked_until = NULL WHERE locked_by = ${workerId}`.execute(db);
}

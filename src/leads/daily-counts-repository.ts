import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../db/connect.js';
import { PreparedStatement } from '../db/prepared.js';

const REPOSITORY = 'leads/daily-counts-repository';

// Every statement of lead_daily_counts (migration 0015): what the intake did per workspace
// and UTC day, for the console's overview. Counted per row the executor ran for a real write
// (dry runs, replays and requests refused before the executor never count):
// - created, updated, skipped: the row's outcome, as POST /leads's meta.status and a batch
//   row's status report it;
// - failed: every other row: a batch row answered `failed`, and a POST /leads refused after
//   validation (409 duplicate_lead, 422 for a reference it names) or whose row failed
//   unexpectedly (500). A request failed as a whole (its transaction undone) counts nothing.

export interface IntakeTally {
  created: number;
  updated: number;
  skipped: number;
  failed: number;
}
export type Outcome = keyof IntakeTally;

/** Days kept: the overview shows 30; housekeeping deletes older rows. */
export const DAILY_COUNTS_KEPT_DAYS = 90;

interface AddDailyCountsInput {
  workspaceIds: number[];
  created: number[];
  updated: number[];
  skipped: number[];
  failed: number[];
}

/**
 * The slot of a day a transaction adds to (migration 0024): its session's, so that transactions
 * on different connections lock different rows and do not queue on one another's commit. Two
 * sessions share a slot only when their process ids do modulo DAY_SLOTS; the overview adds up
 * at most DAY_SLOTS rows per day.
 */
const DAY_SLOTS = 64;
const sessionSlot = sql`(pg_backend_pid() % ${sql.lit(DAY_SLOTS)})::smallint`;

/** A slot's row that exists takes the counts added to it. */
const addedToTheDay = sql`ON CONFLICT (workspace_id, day, slot) DO UPDATE SET created = t.created + excluded.created, updated = t.updated + excluded.updated,
      skipped = t.skipped + excluded.skipped, failed = t.failed + excluded.failed`;

/**
 * Adds rows of counts to their workspaces' rows of the UTC day: `counts` is a FROM item named
 * `c` with workspace_id, created, updated, skipped and failed. Rows are written in workspace
 * order, so concurrent transactions wait on each other's row locks instead of deadlocking.
 */
export const addToDailyCounts = (counts: RawBuilder<unknown>) => sql`
    INSERT INTO lead_daily_counts AS t (workspace_id, day, slot, created, updated, skipped, failed)
    SELECT c.workspace_id, (now() AT TIME ZONE 'UTC')::date, ${sessionSlot}, c.created, c.updated, c.skipped, c.failed
    FROM ${counts}
    ORDER BY c.workspace_id
    ${addedToTheDay}`;

// Every write group's transaction sends it: named, so PostgreSQL parses it once per connection
// and Kysely builds it once (db/prepared.ts).
const ADD_DAILY_COUNTS = new PreparedStatement<AddDailyCountsInput, never>({ repository: REPOSITORY, name: 'ADD_DAILY_COUNTS' }, (input) =>
  addToDailyCounts(
    sql`unnest(${input.workspaceIds}::bigint[], ${input.created}::int[], ${input.updated}::int[], ${input.skipped}::int[], ${input.failed}::int[])
      AS c(workspace_id, created, updated, skipped, failed)`,
  ),
);

/**
 * Adds each workspace's tally to its row of the transaction's UTC day, in one statement. Run
 * it last in the transaction: the row lock is held to commit. `routed` (a Citus coordinator):
 * one workspace's tally goes as addDailyCountsOfWorkspace.
 */
export async function addDailyCounts(db: Executor, tallies: ReadonlyMap<number, IntakeTally>, { routed = false }: { routed?: boolean } = {}): Promise<void> {
  const entries = [...tallies].sort(([a], [b]) => a - b);
  if (entries.length === 0) return;
  if (routed && entries.length === 1) return addDailyCountsOfWorkspace(db, ...entries[0]!);
  const column = (outcome: Outcome) => entries.map(([, tally]) => tally[outcome]);
  await ADD_DAILY_COUNTS.execute(db, {
    workspaceIds: entries.map(([workspaceId]) => workspaceId),
    created: column('created'),
    updated: column('updated'),
    skipped: column('skipped'),
    failed: column('failed'),
  });
}

/**
 * addDailyCounts for one workspace's tally as a row of VALUES naming the workspace: on Citus
 * the coordinator sends it to that workspace's node as one task (the unnest of ADD_DAILY_COUNTS
 * makes an INSERT ... SELECT it runs through itself).
 */
export async function addDailyCountsOfWorkspace(db: Executor, workspaceId: number, tally: IntakeTally): Promise<void> {
  await dailyCountsOfWorkspace(workspaceId, tally).execute(db);
}

/** addDailyCountsOfWorkspace's statement. */
export const dailyCountsOfWorkspace = (workspaceId: number, tally: IntakeTally) => sql`
    INSERT INTO lead_daily_counts AS t (workspace_id, day, slot, created, updated, skipped, failed)
    VALUES (${workspaceId}::bigint, (now() AT TIME ZONE 'UTC')::date, ${sessionSlot}, ${tally.created}::int, ${tally.updated}::int, ${tally.skipped}::int, ${tally.failed}::int)
    ${addedToTheDay}`;

/** Per UTC day of the last `days` (its slots added up), oldest first; zero for a day nothing was counted. */
export async function dailyCounts(db: Executor, workspaceId: number, days: number): Promise<Array<{ day: string } & IntakeTally>> {
  const { rows } = await sql<{ day: string } & IntakeTally>`
    SELECT to_char(d.day, 'YYYY-MM-DD') AS day, coalesce(sum(c.created), 0)::int AS created, coalesce(sum(c.updated), 0)::int AS updated,
      coalesce(sum(c.skipped), 0)::int AS skipped, coalesce(sum(c.failed), 0)::int AS failed
    FROM generate_series(date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => ${days - 1}), date_trunc('day', now() AT TIME ZONE 'UTC'), interval '1 day') AS d(day)
    LEFT JOIN lead_daily_counts c ON c.workspace_id = ${workspaceId} AND c.day = d.day::date
    GROUP BY d.day
    ORDER BY d.day`.execute(db);
  return rows;
}

/** Deletes the days past DAILY_COUNTS_KEPT_DAYS. */
export async function purgeOldDailyCounts(db: Executor): Promise<void> {
  await sql`DELETE FROM lead_daily_counts WHERE day < (now() AT TIME ZONE 'UTC')::date - ${DAILY_COUNTS_KEPT_DAYS}::int`.execute(db);
}

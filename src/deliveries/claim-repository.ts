import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import { PreparedStatement } from '../db/prepared.js';
import type { DeliveryRow } from '../db/schema.js';
import { deliveryEndpoint } from '../endpoints/repository.js';
import { openDelivery } from './repository.js';

const REPOSITORY = 'deliveries/claim-repository';

/** A claimed delivery: the stored row, when its slot comes, and whether its endpoint is disabled. */
export type ClaimedDelivery = DeliveryRow & {
  /** Milliseconds until the slot its endpoint's cap gave it (0: go at once). */
  wait_ms: number;
  /** Set when its endpoint is disabled: it is then recorded Failed without a call. */
  endpoint_disabled_at: string | null;
  endpoint_disabled_reason: string | null;
};

export interface Claim {
  rows: ClaimedDelivery[];
  /** Due deliveries of a capped or paused endpoint that found no slot: rescheduled, not claimed. */
  deferred: number;
}

/**
 * How far ahead a capped endpoint's slot may be for its delivery to be claimed now: the
 * worker waits for the slot (within the lease). Not shorter than the default poll interval,
 * or an idle worker would leave slots unused between two polls.
 */
const SLOT_HORIZON_MS = 1000;

interface ClaimInput {
  workspaceId: number;
  workerId: string;
  limit: number;
  leaseMs: number;
  horizonMs: number;
  onlyId: number;
}

/**
 * The most a claim takes. Its statement locks that many due rows whatever it then claims: a
 * constant LIMIT lets PostgreSQL plan the named statement once (with a parameter there, the
 * generic plan is costed for a tenth of the table and every call would be planned anew). The
 * rows locked and not claimed are free again when the statement commits, milliseconds later.
 */
export const MAX_CLAIM = 64;

const endpoint = deliveryEndpoint('d');

/**
 * The claim of one workspace's deliveries, in one statement whose every table is matched on the
 * workspace (on Citus it runs on that workspace's node; a FOR UPDATE over several shards is
 * refused). A slot's time is never before the statement's now(), so greatest() gives it, or now()
 * for an uncapped delivery; every time is computed in a CTE, never in an UPDATE's SET (Citus
 * refuses STABLE functions, timestamptz arithmetic included, over columns there). Due deliveries are locked with SKIP LOCKED, so workers claim
 * side by side. Those of an endpoint with a cap (or a 429 pause) share its slots with every
 * worker: its `endpoints` row is locked, each candidate in turn takes the next slot (one
 * `1 / max_per_second` after the other, none before `next_slot_at`), and the slot advances.
 * A candidate whose slot is within the horizon is claimed and waits for it; the others are
 * rescheduled to the end of the endpoint's queue (`queued_until`), one spacing apart, and
 * are not claimed: no attempt is spent, and the claim goes on with other endpoints' work.
 * An endpoint without a row (no cap, no pause) costs a lookup and nothing else.
 */
function claimStatement(name: string, only: boolean) {
  return new PreparedStatement<ClaimInput, ClaimedDelivery & { deferred: number }>(
    { repository: REPOSITORY, name },
    (input) => sql`
    WITH locked_due AS (
      SELECT d.id, d.next_attempt_at, ${endpoint.kind} AS endpoint_kind, ${endpoint.id} AS endpoint_id
      FROM deliveries AS d
      WHERE d.workspace_id = ${input.workspaceId} AND d.branch = 'pending' AND d.next_attempt_at <= now() AND (d.locked_until IS NULL OR d.locked_until < now())
        ${only ? sql`AND d.id = ${input.onlyId}::bigint` : sql``}
      ORDER BY d.next_attempt_at, d.id
      LIMIT ${sql.lit(MAX_CLAIM)}
      FOR UPDATE OF d SKIP LOCKED
    ), due AS (
      SELECT * FROM locked_due ORDER BY next_attempt_at, id LIMIT ${input.limit}::int
    ), endpoint AS (
      SELECT due.id, due.next_attempt_at, e.kind, e.endpoint_id, e.disabled_at, e.disabled_reason,
        e.disabled_at IS NULL AND (e.max_per_second IS NOT NULL OR e.next_slot_at > now()) AS held
      FROM due JOIN endpoints AS e ON e.workspace_id = ${input.workspaceId} AND e.kind = due.endpoint_kind AND e.endpoint_id = due.endpoint_id
    ), held AS (
      SELECT id, kind, endpoint_id, row_number() OVER (PARTITION BY kind, endpoint_id ORDER BY next_attempt_at, id) - 1 AS position
      FROM endpoint WHERE held
    ), locked AS (
      SELECT kind, endpoint_id, greatest(next_slot_at, now()) AS base, queued_until, coalesce(1 / max_per_second, 0) AS spacing
      FROM endpoints
      WHERE workspace_id = ${input.workspaceId} AND (kind, endpoint_id) IN (SELECT kind, endpoint_id FROM held)
      ORDER BY kind, endpoint_id
      FOR UPDATE
    ), slot AS (
      SELECT h.id, h.kind, h.endpoint_id, h.position,
        l.base + make_interval(secs => h.position * l.spacing) <= now() + make_interval(secs => ${input.horizonMs}::float8 / 1000) AS soon
      FROM held AS h JOIN locked AS l USING (kind, endpoint_id)
    ), plan AS (
      SELECT l.kind, l.endpoint_id, l.base, l.spacing, p.wanted, p.sending,
        greatest(l.queued_until, l.base + make_interval(secs => p.sending * l.spacing)) AS queue_from
      FROM locked AS l JOIN (
        SELECT kind, endpoint_id, count(*) AS wanted, count(*) FILTER (WHERE soon) AS sending FROM slot GROUP BY kind, endpoint_id
      ) AS p USING (kind, endpoint_id)
    ), placed AS (
      SELECT s.id, s.soon, CASE WHEN s.soon THEN p.base + make_interval(secs => s.position * p.spacing)
        ELSE p.queue_from + make_interval(secs => (s.position - p.sending) * p.spacing) END AS at
      FROM slot AS s JOIN plan AS p USING (kind, endpoint_id)
    ), slots AS (
      SELECT kind, endpoint_id, base + make_interval(secs => sending * spacing) AS next_slot_at,
        CASE WHEN wanted > sending THEN queue_from + make_interval(secs => (wanted - sending) * spacing) END AS queued_until
      FROM plan
    ), leases AS (
      SELECT due.id, greatest(p.at, now()) + make_interval(secs => ${input.leaseMs}::float8 / 1000) AS locked_until
      FROM due LEFT JOIN placed AS p USING (id)
      WHERE p.soon IS NOT false
    ), advanced AS (
      UPDATE endpoints AS e SET next_slot_at = s.next_slot_at, queued_until = coalesce(s.queued_until, e.queued_until)
      FROM slots AS s WHERE e.workspace_id = ${input.workspaceId} AND e.kind = s.kind AND e.endpoint_id = s.endpoint_id
    ), deferred AS (
      UPDATE deliveries AS d SET next_attempt_at = p.at
      FROM placed AS p WHERE d.workspace_id = ${input.workspaceId} AND d.id = p.id AND NOT p.soon
      RETURNING d.id
    ), claimed AS (
      UPDATE deliveries AS d SET locked_by = ${input.workerId}::text, locked_until = l.locked_until
      FROM leases AS l WHERE d.workspace_id = ${input.workspaceId} AND d.id = l.id
      RETURNING d.*
    )
    SELECT c.*, greatest(0, ceil(extract(epoch FROM p.at - clock_timestamp()) * 1000))::int AS wait_ms,
      e.disabled_at AS endpoint_disabled_at, e.disabled_reason AS endpoint_disabled_reason, n.deferred
    FROM (SELECT count(*)::int AS deferred FROM deferred) AS n
    LEFT JOIN claimed AS c ON true
    LEFT JOIN placed AS p ON p.id = c.id
    LEFT JOIN endpoint AS e ON e.id = c.id
  `,
  );
}

const CLAIM_DUE = claimStatement('CLAIM_DUE', false);
const CLAIM_ONE = claimStatement('CLAIM_ONE', true);

/**
 * Claims due deliveries for this worker under a lease and commits the claim at once, so no
 * transaction stays open across HTTP (see claimStatement). A claim whose lease ran out (its
 * worker died) is claimable again. `onlyId`: that delivery only (Send test, Push to CRM).
 */
export async function claimDueDeliveries(db: Executor, workspaceId: number, workerId: string, limit: number, leaseMs: number, onlyId?: number): Promise<Claim> {
  if (limit > MAX_CLAIM) throw new Error(`a claim takes at most ${MAX_CLAIM} deliveries, not ${limit}`);
  const statement = onlyId === undefined ? CLAIM_DUE : CLAIM_ONE;
  const rows = await statement.execute(db, { workspaceId, workerId, limit, leaseMs, horizonMs: SLOT_HORIZON_MS, onlyId: onlyId ?? 0 });
  return {
    // Without a claimed row the statement still answers one row, for the count of deferred ones.
    rows: rows.filter((row) => row.id !== null).map(({ deferred, ...row }) => openDelivery(row)),
    deferred: rows[0]?.deferred ?? 0,
  };
}

/**
 * The workspaces with due deliveries, those after `after` first (then from the lowest), at
 * most `limit` (see src/worker/workspace-turns.ts). Reads every shard on Citus, locking nothing.
 */
export async function dueDeliveryWorkspaces(db: Executor, after: number, limit: number): Promise<number[]> {
  const { rows } = await sql<{ workspace_id: number }>`
    SELECT workspace_id FROM deliveries
    WHERE branch = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until < now())
    GROUP BY workspace_id
    ORDER BY workspace_id <= ${after}, workspace_id
    LIMIT ${limit}
  `.execute(db);
  return rows.map((row) => row.workspace_id);
}

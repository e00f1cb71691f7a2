import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import { DelegatedStatement } from '../db/delegated.js';
import { PreparedStatement } from '../db/prepared.js';
import { jsonParameter, type JsonbParameter } from '../db/sql.js';
import type { DeliveryBranch, EndpointKind } from '../db/schema.js';
import { groupBy } from '../group-by.js';
import { deliveryEndpoint, failingLongEnough, type HealthPolicy } from '../endpoints/repository.js';

const REPOSITORY = 'deliveries/attempt-repository';

// Recording what an attempt did: to the delivery, its attempt log, the lead (a CRM record id)
// and the health of its endpoint. Claiming comes before: src/deliveries/claim-repository.ts.

/** What an attempt says of its endpoint: it answered (a 2xx), it failed, or nothing (no call was made). */
export type EndpointSignal = 'answered' | 'failed' | null;

export interface AttemptOutcome {
  /** The delivery's workspace: outcomes are recorded one workspace per statement. */
  workspaceId: number;
  deliveryId: number;
  /** The attempt's number in its series: every call counts here, a 429 that waited too. */
  attempt: number;
  statusCode: number | null;
  error: string | null;
  reply: string | null;
  durationMs: number;
  /** pending: retry at nextAttemptAt. */
  branch: DeliveryBranch;
  nextAttemptAt: Date | null;
  /** Connector push: the receiver's record id, stored on the lead. */
  crmRecord: { leadId: number; recordId: string } | null;
  endpoint: EndpointSignal;
  /** A 429 that postponed the delivery without counting against its attempts. */
  rateLimited: boolean;
  /** After a 429: the endpoint's deliveries wait until then. */
  pauseEndpointUntil: Date | null;
  /** The trace of the attempt's span (tracing on). */
  traceId?: string | null;
}

/** An endpoint whose failures, as just recorded, meet the disabling rule (src/deliveries/endpoint-health.ts). */
export interface FailingEndpoint {
  workspace_id: number;
  kind: EndpointKind;
  id: number;
  failing_since: string;
  consecutive_failures: number;
  /** The error of one of the failed attempts just recorded. */
  last_error: string | null;
}

interface RecordInput {
  workspaceId: number;
  workerId: string;
  outcomes: JsonbParameter;
  failingForSeconds: number;
  minFailures: number;
}

const endpoint = deliveryEndpoint('d');

/**
 * One statement: the deliveries (each only while this worker still holds its claim: a worker
 * whose lease ran out cannot overwrite the one that took over), their attempt log, CRM record
 * ids, and per endpoint what the attempts said: a 2xx ends its run of failures, a failure
 * extends it (the row is made on its first failure), a 429 pauses it. An endpoint that was
 * and stays healthy is only looked up.
 */
const RECORD_ATTEMPTS = new PreparedStatement<RecordInput, { recorded: number[]; failing: FailingEndpoint[] }>(
  { repository: REPOSITORY, name: 'RECORD_ATTEMPTS' },
  (input) => sql`
  WITH input AS (
    -- recorded_at: Citus refuses now() inside CASE or COALESCE in a modification; a column is fine.
    SELECT *, now() AS recorded_at FROM jsonb_to_recordset(${input.outcomes}::jsonb) AS r(delivery_id bigint, attempt int, status_code int, error text, reply text,
      duration_ms int, branch text, next_attempt_at timestamptz, crm_lead_id bigint, crm_record_id text,
      endpoint text, rate_limited boolean, pause_until timestamptz, trace_id text)
  ), updated AS (
    UPDATE deliveries AS d SET
      attempts = i.attempt,
      rate_limited = d.rate_limited + i.rate_limited::int,
      branch = i.branch,
      status_code = i.status_code,
      error = i.error,
      reply = i.reply,
      next_attempt_at = coalesce(i.next_attempt_at, d.next_attempt_at),
      locked_by = NULL,
      locked_until = NULL,
      finished_at = CASE WHEN i.branch = 'pending' THEN NULL ELSE i.recorded_at END
    FROM input AS i
    WHERE d.workspace_id = ${input.workspaceId} AND d.id = i.delivery_id AND d.locked_by = ${input.workerId}::text AND d.branch = 'pending'
    RETURNING d.id, d.workspace_id, d.series, ${endpoint.kind} AS endpoint_kind, ${endpoint.id} AS endpoint_id
  ), attempt AS (
    INSERT INTO delivery_attempts (workspace_id, delivery_id, series, attempt, status_code, error, reply, duration_ms, trace_id)
    SELECT ${input.workspaceId}::bigint, i.delivery_id, u.series, i.attempt, i.status_code, i.error, i.reply, i.duration_ms, i.trace_id FROM input AS i JOIN updated AS u ON u.id = i.delivery_id
    ON CONFLICT DO NOTHING
  ), synced AS (
    UPDATE leads AS l SET crm_record_id = i.crm_record_id
    FROM input AS i JOIN updated AS u ON u.id = i.delivery_id
    WHERE l.workspace_id = ${input.workspaceId} AND l.id = i.crm_lead_id AND i.crm_record_id IS NOT NULL
  ), outcome AS (
    SELECT ${input.workspaceId}::bigint AS workspace_id, u.endpoint_kind AS kind, u.endpoint_id, bool_or(i.endpoint = 'answered') AS answered,
      count(*) FILTER (WHERE i.endpoint = 'failed') AS failures, max(i.pause_until) AS pause_until,
      (array_agg(i.error ORDER BY i.delivery_id) FILTER (WHERE i.endpoint = 'failed'))[1] AS last_error
    FROM input AS i JOIN updated AS u ON u.id = i.delivery_id
    WHERE u.endpoint_kind IS NOT NULL AND i.endpoint IS NOT NULL
    GROUP BY u.endpoint_kind, u.endpoint_id
  ), health AS (
    -- In key order, as the claim locks them: two statements never wait on each other's rows crosswise.
    INSERT INTO endpoints AS e (workspace_id, kind, endpoint_id, failing_since, consecutive_failures, next_slot_at)
    SELECT o.workspace_id, o.kind, o.endpoint_id, CASE WHEN o.answered THEN NULL ELSE now() END, CASE WHEN o.answered THEN 0 ELSE o.failures END,
      coalesce(o.pause_until, now())
    FROM outcome AS o
    WHERE NOT o.answered OR o.pause_until IS NOT NULL
      OR EXISTS (SELECT 1 FROM endpoints AS f WHERE f.workspace_id = ${input.workspaceId} AND f.kind = o.kind AND f.endpoint_id = o.endpoint_id AND f.failing_since IS NOT NULL)
    ORDER BY o.kind, o.endpoint_id
    ON CONFLICT (kind, endpoint_id, workspace_id) DO UPDATE SET
      failing_since = CASE WHEN excluded.failing_since IS NULL THEN NULL ELSE coalesce(e.failing_since, excluded.failing_since) END,
      consecutive_failures = CASE WHEN excluded.failing_since IS NULL THEN 0 ELSE e.consecutive_failures + excluded.consecutive_failures END,
      next_slot_at = greatest(e.next_slot_at, excluded.next_slot_at)
    RETURNING e.kind, e.endpoint_id, e.failing_since, e.consecutive_failures, e.disabled_at
  )
  SELECT
    (SELECT coalesce(json_agg(id), '[]'::json) FROM updated) AS recorded,
    (SELECT coalesce(json_agg(json_build_object('workspace_id', ${input.workspaceId}::bigint, 'kind', h.kind, 'id', h.endpoint_id, 'failing_since', h.failing_since,
        'consecutive_failures', h.consecutive_failures, 'last_error', o.last_error)), '[]'::json)
      FROM health AS h JOIN outcome AS o USING (kind, endpoint_id)
      WHERE h.disabled_at IS NULL AND ${failingLongEnough('h', input)}) AS failing
`,
);

/** On Citus, RECORD_ATTEMPTS on the workspace's node in one round trip (its inserts from CTEs are not routable whole). */
const RECORD_ATTEMPTS_ON_NODE = new DelegatedStatement(
  RECORD_ATTEMPTS,
  [
    ['workspaceId', 'bigint'],
    ['workerId', 'text'],
    ['outcomes', 'jsonb'],
    ['failingForSeconds', 'float8'],
    ['minFailures', 'int'],
  ],
  [
    ['recorded', 'json'],
    ['failing', 'json'],
  ],
);

/**
 * Records attempts and their consequences (see RECORD_ATTEMPTS). Returns the ids recorded,
 * and the endpoints that now meet `policy`'s rule for disabling (not disabled here).
 */
export async function recordAttempts(db: Executor, workerId: string, outcomes: readonly AttemptOutcome[], policy: HealthPolicy) {
  const byWorkspace = groupBy(outcomes, (outcome) => outcome.workspaceId);
  const recorded: number[] = [];
  const failing: FailingEndpoint[] = [];
  for (const [workspaceId, ofWorkspace] of byWorkspace) {
    const row = await recordWorkspaceAttempts(db, workspaceId, workerId, ofWorkspace, policy);
    recorded.push(...row.recorded);
    failing.push(...row.failing);
  }
  return { recorded, failing };
}

/** One workspace's outcomes in one statement (see RECORD_ATTEMPTS). */
async function recordWorkspaceAttempts(db: Executor, workspaceId: number, workerId: string, outcomes: readonly AttemptOutcome[], policy: HealthPolicy) {
  const input = jsonParameter(
    outcomes.map((outcome) => ({
      delivery_id: outcome.deliveryId,
      attempt: outcome.attempt,
      status_code: outcome.statusCode,
      error: outcome.error,
      reply: outcome.reply,
      duration_ms: outcome.durationMs,
      branch: outcome.branch,
      next_attempt_at: outcome.nextAttemptAt?.toISOString() ?? null,
      crm_lead_id: outcome.crmRecord?.leadId ?? null,
      crm_record_id: outcome.crmRecord?.recordId ?? null,
      endpoint: outcome.endpoint,
      rate_limited: outcome.rateLimited,
      pause_until: outcome.pauseEndpointUntil?.toISOString() ?? null,
      trace_id: outcome.traceId ?? null,
    })),
  );
  const [row] = await RECORD_ATTEMPTS_ON_NODE.execute(db, { workspaceId, workerId, outcomes: input, ...policy });
  return row!;
}

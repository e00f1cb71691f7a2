import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';

// What a workspace's overview counts: finished deliveries per day and endpoints in trouble (its
// leads per day: src/leads/daily-counts-repository.ts).

export interface DailyCount {
  day: string;
  a: number;
  b: number;
}

/** Per UTC day of the last `days`: deliveries that ended Delivered (a) and Failed (b). */
export async function deliveriesPerDay(db: Executor, workspaceId: number, days: number): Promise<DailyCount[]> {
  const { rows } = await sql<DailyCount>`
    WITH finished AS (
      SELECT date_trunc('day', finished_at AT TIME ZONE 'UTC') AS day, branch FROM deliveries
      WHERE workspace_id = ${workspaceId} AND finished_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - make_interval(days => ${days - 1})
    )
    SELECT to_char(d.day, 'YYYY-MM-DD') AS day,
      count(f.*) FILTER (WHERE f.branch = 'Delivered')::int AS a, count(f.*) FILTER (WHERE f.branch = 'Failed')::int AS b
    FROM generate_series(date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => ${days - 1}), date_trunc('day', now() AT TIME ZONE 'UTC'), interval '1 day') AS d(day)
    LEFT JOIN finished f ON f.day = d.day
    GROUP BY d.day ORDER BY d.day`.execute(db);
  return rows;
}

/** Connectors and Custom URL workflows of the workspace that are failing now or disabled. */
export async function failingEndpoints(db: Executor, workspaceId: number) {
  const { rows } = await sql<{
    kind: 'connector' | 'workflow';
    id: number;
    url: string | null;
    consecutive_failures: number;
    failing_since: string | null;
    disabled_at: string | null;
    disabled_reason: string | null;
  }>`
    SELECT e.kind, e.endpoint_id::int AS id, coalesce(c.url, w.block->>'url') AS url, e.consecutive_failures,
      e.failing_since, e.disabled_at, e.disabled_reason
    FROM endpoints e
    LEFT JOIN connectors c ON c.workspace_id = e.workspace_id AND e.kind = 'connector' AND c.id = e.endpoint_id AND c.deleted_at IS NULL
    LEFT JOIN workflows w ON w.workspace_id = e.workspace_id AND e.kind = 'workflow' AND w.id = e.endpoint_id
    WHERE e.workspace_id = ${workspaceId} AND (e.consecutive_failures > 0 OR e.disabled_at IS NOT NULL) AND (c.id IS NOT NULL OR w.id IS NOT NULL)
    ORDER BY e.disabled_at NULLS LAST, e.failing_since`.execute(db);
  return rows;
}

export async function workspaceCounts(db: Executor, workspaceId: number) {
  const {
    rows: [row],
  } = await sql<{ connectors: number; workflows: number; pending: number; members: number }>`
    SELECT (SELECT count(*)::int FROM connectors WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL) AS connectors,
      (SELECT count(*)::int FROM workflows WHERE workspace_id = ${workspaceId}) AS workflows,
      (SELECT count(*)::int FROM deliveries WHERE workspace_id = ${workspaceId} AND branch = 'pending') AS pending,
      (SELECT count(*)::int FROM users WHERE workspace_id = ${workspaceId}) AS members`.execute(db);
  return row!;
}

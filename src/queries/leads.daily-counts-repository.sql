-- The prepared statements of src/leads/daily-counts-repository.ts, as sent (laid out by sql-formatter). Written by `npm run queries`: do not edit.

-- ADD_DAILY_COUNTS
INSERT INTO
  lead_daily_counts AS t (
    workspace_id,
    day,
    slot,
    created,
    updated,
    skipped,
    failed
  )
SELECT
  c.workspace_id,
  (now() AT TIME ZONE 'UTC')::date,
  (pg_backend_pid() % 64)::smallint,
  c.created,
  c.updated,
  c.skipped,
  c.failed
FROM
  unnest(
    $1::bigint[],
    $2::int[],
    $3::int[],
    $4::int[],
    $5::int[]
  ) AS c (workspace_id, created, updated, skipped, failed)
ORDER BY
  c.workspace_id
ON CONFLICT (workspace_id, day, slot) DO UPDATE
SET
  created = t.created + excluded.created,
  updated = t.updated + excluded.updated,
  skipped = t.skipped + excluded.skipped,
  failed = t.failed + excluded.failed;

-- The prepared statements of src/deliveries/attempt-repository.ts, as sent (laid out by sql-formatter). Written by `npm run queries`: do not edit.

-- RECORD_ATTEMPTS
WITH
  input AS (
    -- recorded_at: Citus refuses now() inside CASE or COALESCE in a modification; a column is fine.
    SELECT
      *,
      now() AS recorded_at
    FROM
      jsonb_to_recordset($1::jsonb) AS r (
        delivery_id bigint,
        attempt int,
        status_code int,
        error text,
        reply text,
        duration_ms int,
        branch text,
        next_attempt_at timestamptz,
        crm_lead_id bigint,
        crm_record_id text,
        endpoint text,
        rate_limited boolean,
        pause_until timestamptz,
        trace_id text
      )
  ),
  updated AS (
    UPDATE deliveries AS d
    SET
      attempts = i.attempt,
      rate_limited = d.rate_limited + i.rate_limited::int,
      branch = i.branch,
      status_code = i.status_code,
      error = i.error,
      reply = i.reply,
      next_attempt_at = coalesce(i.next_attempt_at, d.next_attempt_at),
      locked_by = NULL,
      locked_until = NULL,
      finished_at = CASE
        WHEN i.branch = 'pending' THEN NULL
        ELSE i.recorded_at
      END
    FROM
      input AS i
    WHERE
      d.workspace_id = $2
      AND d.id = i.delivery_id
      AND d.locked_by = $3::text
      AND d.branch = 'pending'
    RETURNING
      d.id,
      d.workspace_id,
      d.series,
      CASE
        WHEN "d"."sender" = 'test' THEN NULL
        WHEN "d"."connector_id" IS NOT NULL THEN 'connector'
        WHEN "d"."workflow_id" IS NOT NULL THEN 'workflow'
      END AS endpoint_kind,
      coalesce("d"."connector_id", "d"."workflow_id") AS endpoint_id
  ),
  attempt AS (
    INSERT INTO
      delivery_attempts (
        workspace_id,
        delivery_id,
        series,
        attempt,
        status_code,
        error,
        reply,
        duration_ms,
        trace_id
      )
    SELECT
      $4::bigint,
      i.delivery_id,
      u.series,
      i.attempt,
      i.status_code,
      i.error,
      i.reply,
      i.duration_ms,
      i.trace_id
    FROM
      input AS i
      JOIN updated AS u ON u.id = i.delivery_id
    ON CONFLICT DO NOTHING
  ),
  synced AS (
    UPDATE leads AS l
    SET
      crm_record_id = i.crm_record_id
    FROM
      input AS i
      JOIN updated AS u ON u.id = i.delivery_id
    WHERE
      l.workspace_id = $5
      AND l.id = i.crm_lead_id
      AND i.crm_record_id IS NOT NULL
  ),
  outcome AS (
    SELECT
      $6::bigint AS workspace_id,
      u.endpoint_kind AS kind,
      u.endpoint_id,
      bool_or(i.endpoint = 'answered') AS answered,
      count(*) FILTER (
        WHERE
          i.endpoint = 'failed'
      ) AS failures,
      max(i.pause_until) AS pause_until,
      (
        array_agg(
          i.error
          ORDER BY
            i.delivery_id
        ) FILTER (
          WHERE
            i.endpoint = 'failed'
        )
      ) [1] AS last_error
    FROM
      input AS i
      JOIN updated AS u ON u.id = i.delivery_id
    WHERE
      u.endpoint_kind IS NOT NULL
      AND i.endpoint IS NOT NULL
    GROUP BY
      u.endpoint_kind,
      u.endpoint_id
  ),
  health AS (
    -- In key order, as the claim locks them: two statements never wait on each other's rows crosswise.
    INSERT INTO
      endpoints AS e (
        workspace_id,
        kind,
        endpoint_id,
        failing_since,
        consecutive_failures,
        next_slot_at
      )
    SELECT
      o.workspace_id,
      o.kind,
      o.endpoint_id,
      CASE
        WHEN o.answered THEN NULL
        ELSE now()
      END,
      CASE
        WHEN o.answered THEN 0
        ELSE o.failures
      END,
      coalesce(o.pause_until, now())
    FROM
      outcome AS o
    WHERE
      NOT o.answered
      OR o.pause_until IS NOT NULL
      OR EXISTS (
        SELECT
          1
        FROM
          endpoints AS f
        WHERE
          f.workspace_id = $7
          AND f.kind = o.kind
          AND f.endpoint_id = o.endpoint_id
          AND f.failing_since IS NOT NULL
      )
    ORDER BY
      o.kind,
      o.endpoint_id
    ON CONFLICT (kind, endpoint_id, workspace_id) DO UPDATE
    SET
      failing_since = CASE
        WHEN excluded.failing_since IS NULL THEN NULL
        ELSE coalesce(e.failing_since, excluded.failing_since)
      END,
      consecutive_failures = CASE
        WHEN excluded.failing_since IS NULL THEN 0
        ELSE e.consecutive_failures + excluded.consecutive_failures
      END,
      next_slot_at = greatest(e.next_slot_at, excluded.next_slot_at)
    RETURNING
      e.kind,
      e.endpoint_id,
      e.failing_since,
      e.consecutive_failures,
      e.disabled_at
  )
SELECT
  (
    SELECT
      coalesce(json_agg(id), '[]'::json)
    FROM
      updated
  ) AS recorded,
  (
    SELECT
      coalesce(
        json_agg(
          json_build_object(
            'workspace_id',
            $8::bigint,
            'kind',
            h.kind,
            'id',
            h.endpoint_id,
            'failing_since',
            h.failing_since,
            'consecutive_failures',
            h.consecutive_failures,
            'last_error',
            o.last_error
          )
        ),
        '[]'::json
      )
    FROM
      health AS h
      JOIN outcome AS o USING (kind, endpoint_id)
    WHERE
      h.disabled_at IS NULL
      AND (
        "h"."failing_since" <= now() - make_interval(secs => $9::float8)
        AND "h"."consecutive_failures" >= $10::int
      )
  ) AS failing;

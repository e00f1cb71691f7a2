-- The prepared statements of src/deliveries/claim-repository.ts, as sent (laid out by sql-formatter). Written by `npm run queries`: do not edit.

-- CLAIM_DUE
WITH
  locked_due AS (
    SELECT
      d.id,
      d.next_attempt_at,
      CASE
        WHEN "d"."sender" = 'test' THEN NULL
        WHEN "d"."connector_id" IS NOT NULL THEN 'connector'
        WHEN "d"."workflow_id" IS NOT NULL THEN 'workflow'
      END AS endpoint_kind,
      coalesce("d"."connector_id", "d"."workflow_id") AS endpoint_id
    FROM
      deliveries AS d
    WHERE
      d.workspace_id = $1
      AND d.branch = 'pending'
      AND d.next_attempt_at <= now()
      AND (
        d.locked_until IS NULL
        OR d.locked_until < now()
      )
    ORDER BY
      d.next_attempt_at,
      d.id
    LIMIT
      64
    FOR UPDATE OF
      d SKIP LOCKED
  ),
  due AS (
    SELECT
      *
    FROM
      locked_due
    ORDER BY
      next_attempt_at,
      id
    LIMIT
      $2::int
  ),
  endpoint AS (
    SELECT
      due.id,
      due.next_attempt_at,
      e.kind,
      e.endpoint_id,
      e.disabled_at,
      e.disabled_reason,
      e.disabled_at IS NULL
      AND (
        e.max_per_second IS NOT NULL
        OR e.next_slot_at > now()
      ) AS held
    FROM
      due
      JOIN endpoints AS e ON e.workspace_id = $3
      AND e.kind = due.endpoint_kind
      AND e.endpoint_id = due.endpoint_id
  ),
  held AS (
    SELECT
      id,
      kind,
      endpoint_id,
      row_number() OVER (
        PARTITION BY
          kind,
          endpoint_id
        ORDER BY
          next_attempt_at,
          id
      ) - 1 AS position
    FROM
      endpoint
    WHERE
      held
  ),
  locked AS (
    SELECT
      kind,
      endpoint_id,
      greatest(next_slot_at, now()) AS base,
      queued_until,
      coalesce(1 / max_per_second, 0) AS spacing
    FROM
      endpoints
    WHERE
      workspace_id = $4
      AND (kind, endpoint_id) IN (
        SELECT
          kind,
          endpoint_id
        FROM
          held
      )
    ORDER BY
      kind,
      endpoint_id
    FOR UPDATE
  ),
  slot AS (
    SELECT
      h.id,
      h.kind,
      h.endpoint_id,
      h.position,
      l.base + make_interval(secs => h.position * l.spacing) <= now() + make_interval(secs => $5::float8 / 1000) AS soon
    FROM
      held AS h
      JOIN locked AS l USING (kind, endpoint_id)
  ),
  plan AS (
    SELECT
      l.kind,
      l.endpoint_id,
      l.base,
      l.spacing,
      p.wanted,
      p.sending,
      greatest(
        l.queued_until,
        l.base + make_interval(secs => p.sending * l.spacing)
      ) AS queue_from
    FROM
      locked AS l
      JOIN (
        SELECT
          kind,
          endpoint_id,
          count(*) AS wanted,
          count(*) FILTER (
            WHERE
              soon
          ) AS sending
        FROM
          slot
        GROUP BY
          kind,
          endpoint_id
      ) AS p USING (kind, endpoint_id)
  ),
  placed AS (
    SELECT
      s.id,
      s.soon,
      CASE
        WHEN s.soon THEN p.base + make_interval(secs => s.position * p.spacing)
        ELSE p.queue_from + make_interval(secs => (s.position - p.sending) * p.spacing)
      END AS at
    FROM
      slot AS s
      JOIN plan AS p USING (kind, endpoint_id)
  ),
  slots AS (
    SELECT
      kind,
      endpoint_id,
      base + make_interval(secs => sending * spacing) AS next_slot_at,
      CASE
        WHEN wanted > sending THEN queue_from + make_interval(secs => (wanted - sending) * spacing)
      END AS queued_until
    FROM
      plan
  ),
  leases AS (
    SELECT
      due.id,
      greatest(p.at, now()) + make_interval(secs => $6::float8 / 1000) AS locked_until
    FROM
      due
      LEFT JOIN placed AS p USING (id)
    WHERE
      p.soon IS NOT false
  ),
  advanced AS (
    UPDATE endpoints AS e
    SET
      next_slot_at = s.next_slot_at,
      queued_until = coalesce(s.queued_until, e.queued_until)
    FROM
      slots AS s
    WHERE
      e.workspace_id = $7
      AND e.kind = s.kind
      AND e.endpoint_id = s.endpoint_id
  ),
  deferred AS (
    UPDATE deliveries AS d
    SET
      next_attempt_at = p.at
    FROM
      placed AS p
    WHERE
      d.workspace_id = $8
      AND d.id = p.id
      AND NOT p.soon
    RETURNING
      d.id
  ),
  claimed AS (
    UPDATE deliveries AS d
    SET
      locked_by = $9::text,
      locked_until = l.locked_until
    FROM
      leases AS l
    WHERE
      d.workspace_id = $10
      AND d.id = l.id
    RETURNING
      d.*
  )
SELECT
  c.*,
  greatest(
    0,
    ceil(
      extract(
        epoch
        FROM
          p.at - clock_timestamp()
      ) * 1000
    )
  )::int AS wait_ms,
  e.disabled_at AS endpoint_disabled_at,
  e.disabled_reason AS endpoint_disabled_reason,
  n.deferred
FROM
  (
    SELECT
      count(*)::int AS deferred
    FROM
      deferred
  ) AS n
  LEFT JOIN claimed AS c ON true
  LEFT JOIN placed AS p ON p.id = c.id
  LEFT JOIN endpoint AS e ON e.id = c.id;

-- CLAIM_ONE
WITH
  locked_due AS (
    SELECT
      d.id,
      d.next_attempt_at,
      CASE
        WHEN "d"."sender" = 'test' THEN NULL
        WHEN "d"."connector_id" IS NOT NULL THEN 'connector'
        WHEN "d"."workflow_id" IS NOT NULL THEN 'workflow'
      END AS endpoint_kind,
      coalesce("d"."connector_id", "d"."workflow_id") AS endpoint_id
    FROM
      deliveries AS d
    WHERE
      d.workspace_id = $1
      AND d.branch = 'pending'
      AND d.next_attempt_at <= now()
      AND (
        d.locked_until IS NULL
        OR d.locked_until < now()
      )
      AND d.id = $2::bigint
    ORDER BY
      d.next_attempt_at,
      d.id
    LIMIT
      64
    FOR UPDATE OF
      d SKIP LOCKED
  ),
  due AS (
    SELECT
      *
    FROM
      locked_due
    ORDER BY
      next_attempt_at,
      id
    LIMIT
      $3::int
  ),
  endpoint AS (
    SELECT
      due.id,
      due.next_attempt_at,
      e.kind,
      e.endpoint_id,
      e.disabled_at,
      e.disabled_reason,
      e.disabled_at IS NULL
      AND (
        e.max_per_second IS NOT NULL
        OR e.next_slot_at > now()
      ) AS held
    FROM
      due
      JOIN endpoints AS e ON e.workspace_id = $4
      AND e.kind = due.endpoint_kind
      AND e.endpoint_id = due.endpoint_id
  ),
  held AS (
    SELECT
      id,
      kind,
      endpoint_id,
      row_number() OVER (
        PARTITION BY
          kind,
          endpoint_id
        ORDER BY
          next_attempt_at,
          id
      ) - 1 AS position
    FROM
      endpoint
    WHERE
      held
  ),
  locked AS (
    SELECT
      kind,
      endpoint_id,
      greatest(next_slot_at, now()) AS base,
      queued_until,
      coalesce(1 / max_per_second, 0) AS spacing
    FROM
      endpoints
    WHERE
      workspace_id = $5
      AND (kind, endpoint_id) IN (
        SELECT
          kind,
          endpoint_id
        FROM
          held
      )
    ORDER BY
      kind,
      endpoint_id
    FOR UPDATE
  ),
  slot AS (
    SELECT
      h.id,
      h.kind,
      h.endpoint_id,
      h.position,
      l.base + make_interval(secs => h.position * l.spacing) <= now() + make_interval(secs => $6::float8 / 1000) AS soon
    FROM
      held AS h
      JOIN locked AS l USING (kind, endpoint_id)
  ),
  plan AS (
    SELECT
      l.kind,
      l.endpoint_id,
      l.base,
      l.spacing,
      p.wanted,
      p.sending,
      greatest(
        l.queued_until,
        l.base + make_interval(secs => p.sending * l.spacing)
      ) AS queue_from
    FROM
      locked AS l
      JOIN (
        SELECT
          kind,
          endpoint_id,
          count(*) AS wanted,
          count(*) FILTER (
            WHERE
              soon
          ) AS sending
        FROM
          slot
        GROUP BY
          kind,
          endpoint_id
      ) AS p USING (kind, endpoint_id)
  ),
  placed AS (
    SELECT
      s.id,
      s.soon,
      CASE
        WHEN s.soon THEN p.base + make_interval(secs => s.position * p.spacing)
        ELSE p.queue_from + make_interval(secs => (s.position - p.sending) * p.spacing)
      END AS at
    FROM
      slot AS s
      JOIN plan AS p USING (kind, endpoint_id)
  ),
  slots AS (
    SELECT
      kind,
      endpoint_id,
      base + make_interval(secs => sending * spacing) AS next_slot_at,
      CASE
        WHEN wanted > sending THEN queue_from + make_interval(secs => (wanted - sending) * spacing)
      END AS queued_until
    FROM
      plan
  ),
  leases AS (
    SELECT
      due.id,
      greatest(p.at, now()) + make_interval(secs => $7::float8 / 1000) AS locked_until
    FROM
      due
      LEFT JOIN placed AS p USING (id)
    WHERE
      p.soon IS NOT false
  ),
  advanced AS (
    UPDATE endpoints AS e
    SET
      next_slot_at = s.next_slot_at,
      queued_until = coalesce(s.queued_until, e.queued_until)
    FROM
      slots AS s
    WHERE
      e.workspace_id = $8
      AND e.kind = s.kind
      AND e.endpoint_id = s.endpoint_id
  ),
  deferred AS (
    UPDATE deliveries AS d
    SET
      next_attempt_at = p.at
    FROM
      placed AS p
    WHERE
      d.workspace_id = $9
      AND d.id = p.id
      AND NOT p.soon
    RETURNING
      d.id
  ),
  claimed AS (
    UPDATE deliveries AS d
    SET
      locked_by = $10::text,
      locked_until = l.locked_until
    FROM
      leases AS l
    WHERE
      d.workspace_id = $11
      AND d.id = l.id
    RETURNING
      d.*
  )
SELECT
  c.*,
  greatest(
    0,
    ceil(
      extract(
        epoch
        FROM
          p.at - clock_timestamp()
      ) * 1000
    )
  )::int AS wait_ms,
  e.disabled_at AS endpoint_disabled_at,
  e.disabled_reason AS endpoint_disabled_reason,
  n.deferred
FROM
  (
    SELECT
      count(*)::int AS deferred
    FROM
      deferred
  ) AS n
  LEFT JOIN claimed AS c ON true
  LEFT JOIN placed AS p ON p.id = c.id
  LEFT JOIN endpoint AS e ON e.id = c.id;

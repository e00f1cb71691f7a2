-- The prepared statements of src/leads/new-leads-repository.ts, as sent (laid out by sql-formatter). Written by `npm run queries`: do not edit.

-- NEW_LEADS
WITH
  r AS (
    SELECT
      *
    FROM
      jsonb_to_recordset($1::jsonb) AS r (
        ord int,
        key_count int,
        company_id bigint,
        name text,
        job_title text,
        description text,
        gender text,
        language text,
        decision_maker boolean,
        source text,
        emails jsonb,
        phones jsonb,
        links jsonb,
        locations jsonb,
        custom_fields jsonb
      )
  ),
  ids AS (
    SELECT
      r.ord,
      nextval(pg_get_serial_sequence('leads', 'id')) AS id
    FROM
      r
    ORDER BY
      r.ord
  ),
  lead AS (
    INSERT INTO
      leads (
        id,
        workspace_id,
        company_id,
        name,
        job_title,
        description,
        gender,
        language,
        decision_maker,
        source,
        stage,
        chargeable,
        emails,
        phones,
        links,
        locations,
        custom_fields
      )
    OVERRIDING SYSTEM VALUE
    SELECT
      ids.id,
      $2,
      r.company_id,
      r.name,
      r.job_title,
      r.description,
      r.gender,
      r.language,
      coalesce(r.decision_maker, false),
      coalesce(r.source, 'api'),
      'new',
      false,
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.emails)
      ),
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.phones)
      ),
      r.links,
      r.locations,
      r.custom_fields
    FROM
      r
      JOIN ids USING (ord)
    ORDER BY
      r.ord
    RETURNING
      *
  ),
  claimed AS (
    INSERT INTO
      lead_identities (workspace_id, kind, value, lead_id)
    SELECT
      $3,
      k.kind,
      k.value,
      "claiming".id
    FROM
      unnest($4::int[], $5::text[], $6::text[]) AS k (ord, kind, value)
      JOIN ids AS "claiming" USING (ord)
    ORDER BY
      k.kind,
      k.value
    ON CONFLICT (workspace_id, kind, value) DO NOTHING
    RETURNING
      lead_id
  ),
  claimed_count AS (
    SELECT
      lead_id,
      count(*) AS n
    FROM
      claimed
    GROUP BY
      lead_id
  ),
  complete AS (
    SELECT
      ids.*
    FROM
      ids
      JOIN r USING (ord)
      LEFT JOIN claimed_count AS c ON c.lead_id = ids.id
    WHERE
      r.key_count = coalesce(c.n, 0)
  ),
  tag_rows AS (
    SELECT
      *
    FROM
      unnest($7::int[], $8::bigint[]) AS t (ord, tag_id)
  ),
  tagged AS (
    INSERT INTO
      lead_tags (workspace_id, lead_id, tag_id)
    SELECT
      $9,
      complete.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN complete USING (ord)
    ON CONFLICT DO NOTHING
  ),
  queued AS (
    INSERT INTO
      outbox (workspace_id, topic, payload, trace_context)
    SELECT
      $10,
      e.topic,
      CASE
        WHEN e.topic = 'lead.created' THEN jsonb_build_object('lead_id', l.id)
        ELSE e.payload
      END,
      ($11::text[]) [l.ord + 1]
    FROM
      unnest($12::int[], $13::text[], $14::jsonb[]) WITH ORDINALITY AS e (ord, topic, payload, n)
      JOIN "complete" AS l USING (ord)
    ORDER BY
      e.n
  )
SELECT
  ids.ord,
  ids.id,
  complete.id IS NOT NULL AS complete
FROM
  ids
  LEFT JOIN complete USING (ord)
ORDER BY
  ids.ord;

-- NEW_LEAD_RECORDS
WITH
  r AS (
    SELECT
      *
    FROM
      jsonb_to_recordset($1::jsonb) AS r (
        ord int,
        key_count int,
        company_id bigint,
        name text,
        job_title text,
        description text,
        gender text,
        language text,
        decision_maker boolean,
        source text,
        emails jsonb,
        phones jsonb,
        links jsonb,
        locations jsonb,
        custom_fields jsonb
      )
  ),
  ids AS (
    SELECT
      r.ord,
      nextval(pg_get_serial_sequence('leads', 'id')) AS id
    FROM
      r
    ORDER BY
      r.ord
  ),
  lead AS (
    INSERT INTO
      leads (
        id,
        workspace_id,
        company_id,
        name,
        job_title,
        description,
        gender,
        language,
        decision_maker,
        source,
        stage,
        chargeable,
        emails,
        phones,
        links,
        locations,
        custom_fields
      )
    OVERRIDING SYSTEM VALUE
    SELECT
      ids.id,
      $2,
      r.company_id,
      r.name,
      r.job_title,
      r.description,
      r.gender,
      r.language,
      coalesce(r.decision_maker, false),
      coalesce(r.source, 'api'),
      'new',
      false,
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.emails)
      ),
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.phones)
      ),
      r.links,
      r.locations,
      r.custom_fields
    FROM
      r
      JOIN ids USING (ord)
    ORDER BY
      r.ord
    RETURNING
      *
  ),
  claimed AS (
    INSERT INTO
      lead_identities (workspace_id, kind, value, lead_id)
    SELECT
      $3,
      k.kind,
      k.value,
      "claiming".id
    FROM
      unnest($4::int[], $5::text[], $6::text[]) AS k (ord, kind, value)
      JOIN ids AS "claiming" USING (ord)
    ORDER BY
      k.kind,
      k.value
    ON CONFLICT (workspace_id, kind, value) DO NOTHING
    RETURNING
      lead_id
  ),
  claimed_count AS (
    SELECT
      lead_id,
      count(*) AS n
    FROM
      claimed
    GROUP BY
      lead_id
  ),
  complete AS (
    SELECT
      ids.*
    FROM
      ids
      JOIN r USING (ord)
      LEFT JOIN claimed_count AS c ON c.lead_id = ids.id
    WHERE
      r.key_count = coalesce(c.n, 0)
  ),
  tag_rows AS (
    SELECT
      *
    FROM
      unnest($7::int[], $8::bigint[]) AS t (ord, tag_id)
  ),
  tagged AS (
    INSERT INTO
      lead_tags (workspace_id, lead_id, tag_id)
    SELECT
      $9,
      complete.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN complete USING (ord)
    ON CONFLICT DO NOTHING
  ),
  queued AS (
    INSERT INTO
      outbox (workspace_id, topic, payload, trace_context)
    SELECT
      $10,
      e.topic,
      CASE
        WHEN e.topic = 'lead.created' THEN jsonb_build_object('lead_id', l.id)
        ELSE e.payload
      END,
      ($11::text[]) [l.ord + 1]
    FROM
      unnest($12::int[], $13::text[], $14::jsonb[]) WITH ORDINALITY AS e (ord, topic, payload, n)
      JOIN "complete" AS l USING (ord)
    ORDER BY
      e.n
  ),
  company_records AS MATERIALIZED (
    SELECT
      c.id,
      CASE
        WHEN "c"."id" IS NULL THEN NULL
        ELSE json_build_object(
          'id',
          "c"."id",
          'name',
          "c"."name",
          'industry',
          "c"."industry",
          'size',
          "c"."size",
          'description',
          "c"."description",
          'status',
          "c"."status",
          'links',
          "c"."links",
          'created_at',
          to_char(
            "c"."created_at" AT TIME ZONE 'UTC',
            'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'
          ),
          'tags',
          coalesce(
            (
              SELECT
                json_agg(
                  json_build_object(
                    'id',
                    "t"."id",
                    'name',
                    "t"."name",
                    'color',
                    "t"."color",
                    'active',
                    "t"."active"
                  )
                  ORDER BY
                    lower("t"."name"),
                    "t"."name",
                    "t"."id"
                )
              FROM
                "company_tags" AS j
                JOIN tags AS t ON t.workspace_id = j.workspace_id
                AND t.id = j.tag_id
              WHERE
                j.workspace_id = $15
                AND j."company_id" = "c"."id"
            ),
            '[]'::json
          )
        )
      END AS company
    FROM
      companies AS c
    WHERE
      c.workspace_id = $16
      AND c.id IN (
        SELECT
          company_id
        FROM
          r
      )
  ),
  tag_records AS MATERIALIZED (
    SELECT
      t.id,
      json_build_object(
        'id',
        "t"."id",
        'name',
        "t"."name",
        'color',
        "t"."color",
        'active',
        "t"."active"
      ) AS tag,
      row_number() OVER (
        ORDER BY
          lower("t"."name"),
          "t"."name",
          "t"."id"
      ) AS position
    FROM
      tags AS t
    WHERE
      t.workspace_id = $17
      AND t.id IN (
        SELECT
          tag_id
        FROM
          tag_rows
      )
  )
SELECT
  ids.ord,
  complete.id IS NOT NULL AS complete,
  "lead"."id",
  "lead"."name",
  "lead"."job_title",
  "lead"."description",
  "lead"."gender",
  "lead"."language",
  "lead"."decision_maker",
  "lead"."stage",
  "lead"."source",
  "lead"."emails",
  "lead"."phones",
  "lead"."links",
  "lead"."locations",
  "lead"."custom_fields",
  "lead"."created_at",
  "lead"."updated_at",
  coalesce(
    (
      SELECT
        json_agg(
          tr.tag
          ORDER BY
            tr.position
        )
      FROM
        tag_records AS tr
      WHERE
        tr.id IN (
          SELECT
            tag_id
          FROM
            tag_rows
          WHERE
            tag_rows.ord = ids.ord
        )
    ),
    '[]'::json
  ) AS tags,
  (
    SELECT
      cr.company
    FROM
      company_records AS cr
    WHERE
      cr.id = lead.company_id
  ) AS company
FROM
  ids
  LEFT JOIN complete USING (ord)
  LEFT JOIN lead ON lead.id = ids.id
ORDER BY
  ids.ord;

-- NEW_LEAD_RECORDS_ACROSS
WITH
  r AS (
    SELECT
      *
    FROM
      jsonb_to_recordset($1::jsonb) AS r (
        ord int,
        key_count int,
        workspace_id bigint,
        company_id bigint,
        name text,
        job_title text,
        description text,
        gender text,
        language text,
        decision_maker boolean,
        source text,
        emails jsonb,
        phones jsonb,
        links jsonb,
        locations jsonb,
        custom_fields jsonb
      )
  ),
  ids AS (
    SELECT
      r.ord,
      r.workspace_id,
      nextval(pg_get_serial_sequence('leads', 'id')) AS id
    FROM
      r
    ORDER BY
      r.ord
  ),
  lead AS (
    INSERT INTO
      leads (
        id,
        workspace_id,
        company_id,
        name,
        job_title,
        description,
        gender,
        language,
        decision_maker,
        source,
        stage,
        chargeable,
        emails,
        phones,
        links,
        locations,
        custom_fields
      )
    OVERRIDING SYSTEM VALUE
    SELECT
      ids.id,
      "r"."workspace_id",
      r.company_id,
      r.name,
      r.job_title,
      r.description,
      r.gender,
      r.language,
      coalesce(r.decision_maker, false),
      coalesce(r.source, 'api'),
      'new',
      false,
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.emails)
      ),
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.phones)
      ),
      r.links,
      r.locations,
      r.custom_fields
    FROM
      r
      JOIN ids USING (ord)
    ORDER BY
      r.ord
    RETURNING
      *
  ),
  claimed AS (
    INSERT INTO
      lead_identities (workspace_id, kind, value, lead_id)
    SELECT
      "claiming"."workspace_id",
      k.kind,
      k.value,
      "claiming".id
    FROM
      unnest($2::int[], $3::text[], $4::text[]) AS k (ord, kind, value)
      JOIN ids AS "claiming" USING (ord)
    ORDER BY
      "claiming"."workspace_id",
      k.kind,
      k.value
    ON CONFLICT (workspace_id, kind, value) DO NOTHING
    RETURNING
      lead_id
  ),
  claimed_count AS (
    SELECT
      lead_id,
      count(*) AS n
    FROM
      claimed
    GROUP BY
      lead_id
  ),
  complete AS (
    SELECT
      ids.*
    FROM
      ids
      JOIN r USING (ord)
      LEFT JOIN claimed_count AS c ON c.lead_id = ids.id
    WHERE
      r.key_count = coalesce(c.n, 0)
  ),
  tag_rows AS (
    SELECT
      *
    FROM
      unnest($5::int[], $6::bigint[]) AS t (ord, tag_id)
  ),
  tagged AS (
    INSERT INTO
      lead_tags (workspace_id, lead_id, tag_id)
    SELECT
      "complete"."workspace_id",
      complete.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN complete USING (ord)
    ON CONFLICT DO NOTHING
  ),
  queued AS (
    INSERT INTO
      outbox (workspace_id, topic, payload, trace_context)
    SELECT
      "l"."workspace_id",
      e.topic,
      CASE
        WHEN e.topic = 'lead.created' THEN jsonb_build_object('lead_id', l.id)
        ELSE e.payload
      END,
      ($7::text[]) [l.ord + 1]
    FROM
      unnest($8::int[], $9::text[], $10::jsonb[]) WITH ORDINALITY AS e (ord, topic, payload, n)
      JOIN "complete" AS l USING (ord)
    ORDER BY
      e.n
  ),
  company_records AS MATERIALIZED (
    SELECT
      c.id,
      CASE
        WHEN "c"."id" IS NULL THEN NULL
        ELSE json_build_object(
          'id',
          "c"."id",
          'name',
          "c"."name",
          'industry',
          "c"."industry",
          'size',
          "c"."size",
          'description',
          "c"."description",
          'status',
          "c"."status",
          'links',
          "c"."links",
          'created_at',
          to_char(
            "c"."created_at" AT TIME ZONE 'UTC',
            'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'
          ),
          'tags',
          coalesce(
            (
              SELECT
                json_agg(
                  json_build_object(
                    'id',
                    "t"."id",
                    'name',
                    "t"."name",
                    'color',
                    "t"."color",
                    'active',
                    "t"."active"
                  )
                  ORDER BY
                    lower("t"."name"),
                    "t"."name",
                    "t"."id"
                )
              FROM
                "company_tags" AS j
                JOIN tags AS t ON t.workspace_id = j.workspace_id
                AND t.id = j.tag_id
              WHERE
                j.workspace_id = "c"."workspace_id"
                AND j."company_id" = "c"."id"
            ),
            '[]'::json
          )
        )
      END AS company
    FROM
      (
        SELECT DISTINCT
          workspace_id,
          company_id
        FROM
          r
        WHERE
          company_id IS NOT NULL
      ) AS wanted
      CROSS JOIN LATERAL (
        SELECT
          *
        FROM
          companies
        WHERE
          workspace_id = wanted.workspace_id
          AND id = wanted.company_id
        OFFSET
          0
      ) AS c
  ),
  tag_records AS MATERIALIZED (
    SELECT
      t.id,
      json_build_object(
        'id',
        "t"."id",
        'name',
        "t"."name",
        'color',
        "t"."color",
        'active',
        "t"."active"
      ) AS tag,
      row_number() OVER (
        ORDER BY
          lower("t"."name"),
          "t"."name",
          "t"."id"
      ) AS position
    FROM
      (
        SELECT DISTINCT
          workspace_id,
          tag_id
        FROM
          tag_rows
          JOIN ids USING (ord)
      ) AS wanted
      CROSS JOIN LATERAL (
        SELECT
          *
        FROM
          tags
        WHERE
          workspace_id = wanted.workspace_id
          AND id = wanted.tag_id
        OFFSET
          0
      ) AS t
  )
SELECT
  ids.ord,
  complete.id IS NOT NULL AS complete,
  "lead"."id",
  "lead"."name",
  "lead"."job_title",
  "lead"."description",
  "lead"."gender",
  "lead"."language",
  "lead"."decision_maker",
  "lead"."stage",
  "lead"."source",
  "lead"."emails",
  "lead"."phones",
  "lead"."links",
  "lead"."locations",
  "lead"."custom_fields",
  "lead"."created_at",
  "lead"."updated_at",
  coalesce(
    (
      SELECT
        json_agg(
          tr.tag
          ORDER BY
            tr.position
        )
      FROM
        tag_records AS tr
      WHERE
        tr.id IN (
          SELECT
            tag_id
          FROM
            tag_rows
          WHERE
            tag_rows.ord = ids.ord
        )
    ),
    '[]'::json
  ) AS tags,
  (
    SELECT
      cr.company
    FROM
      company_records AS cr
    WHERE
      cr.id = lead.company_id
  ) AS company
FROM
  ids
  LEFT JOIN complete USING (ord)
  LEFT JOIN lead ON lead.id = ids.id
ORDER BY
  ids.ord;

-- NEW_LEAD_RECORDS_ALONE
WITH
  r AS (
    SELECT
      *
    FROM
      jsonb_to_recordset($1::jsonb) AS r (
        ord int,
        key_count int,
        company_id bigint,
        name text,
        job_title text,
        description text,
        gender text,
        language text,
        decision_maker boolean,
        source text,
        emails jsonb,
        phones jsonb,
        links jsonb,
        locations jsonb,
        custom_fields jsonb
      )
  ),
  ids AS (
    SELECT
      r.ord,
      nextval(pg_get_serial_sequence('leads', 'id')) AS id
    FROM
      r
    ORDER BY
      r.ord
  ),
  lead AS (
    INSERT INTO
      leads (
        id,
        workspace_id,
        company_id,
        name,
        job_title,
        description,
        gender,
        language,
        decision_maker,
        source,
        stage,
        chargeable,
        emails,
        phones,
        links,
        locations,
        custom_fields
      )
    OVERRIDING SYSTEM VALUE
    SELECT
      ids.id,
      $2,
      r.company_id,
      r.name,
      r.job_title,
      r.description,
      r.gender,
      r.language,
      coalesce(r.decision_maker, false),
      coalesce(r.source, 'api'),
      'new',
      false,
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.emails)
      ),
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.phones)
      ),
      r.links,
      r.locations,
      r.custom_fields
    FROM
      r
      JOIN ids USING (ord)
    ORDER BY
      r.ord
    RETURNING
      *
  ),
  claimed AS (
    INSERT INTO
      lead_identities (workspace_id, kind, value, lead_id)
    SELECT
      $3,
      k.kind,
      k.value,
      "claiming".id
    FROM
      unnest($4::int[], $5::text[], $6::text[]) AS k (ord, kind, value)
      JOIN ids AS "claiming" USING (ord)
    ORDER BY
      k.kind,
      k.value
    RETURNING
      lead_id
  ),
  claimed_count AS (
    SELECT
      lead_id,
      count(*) AS n
    FROM
      claimed
    GROUP BY
      lead_id
  ),
  complete AS (
    SELECT
      ids.*
    FROM
      ids
      JOIN r USING (ord)
      LEFT JOIN claimed_count AS c ON c.lead_id = ids.id
    WHERE
      r.key_count = coalesce(c.n, 0)
  ),
  tag_rows AS (
    SELECT
      *
    FROM
      unnest($7::int[], $8::bigint[]) AS t (ord, tag_id)
  ),
  tagged AS (
    INSERT INTO
      lead_tags (workspace_id, lead_id, tag_id)
    SELECT
      $9,
      complete.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN complete USING (ord)
    ON CONFLICT DO NOTHING
  ),
  queued AS (
    INSERT INTO
      outbox (workspace_id, topic, payload, trace_context)
    SELECT
      $10,
      e.topic,
      CASE
        WHEN e.topic = 'lead.created' THEN jsonb_build_object('lead_id', l.id)
        ELSE e.payload
      END,
      ($11::text[]) [l.ord + 1]
    FROM
      unnest($12::int[], $13::text[], $14::jsonb[]) WITH ORDINALITY AS e (ord, topic, payload, n)
      JOIN "complete" AS l USING (ord)
    ORDER BY
      e.n
  ),
  counted AS (
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
      (
        SELECT
          $15::bigint AS workspace_id,
          count(*) AS created,
          0 AS updated,
          0 AS skipped,
          0 AS failed
        FROM
          complete
        GROUP BY
          1
      ) AS c
    ORDER BY
      c.workspace_id
    ON CONFLICT (workspace_id, day, slot) DO UPDATE
    SET
      created = t.created + excluded.created,
      updated = t.updated + excluded.updated,
      skipped = t.skipped + excluded.skipped,
      failed = t.failed + excluded.failed
  ),
  company_records AS MATERIALIZED (
    SELECT
      c.id,
      CASE
        WHEN "c"."id" IS NULL THEN NULL
        ELSE json_build_object(
          'id',
          "c"."id",
          'name',
          "c"."name",
          'industry',
          "c"."industry",
          'size',
          "c"."size",
          'description',
          "c"."description",
          'status',
          "c"."status",
          'links',
          "c"."links",
          'created_at',
          to_char(
            "c"."created_at" AT TIME ZONE 'UTC',
            'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'
          ),
          'tags',
          coalesce(
            (
              SELECT
                json_agg(
                  json_build_object(
                    'id',
                    "t"."id",
                    'name',
                    "t"."name",
                    'color',
                    "t"."color",
                    'active',
                    "t"."active"
                  )
                  ORDER BY
                    lower("t"."name"),
                    "t"."name",
                    "t"."id"
                )
              FROM
                "company_tags" AS j
                JOIN tags AS t ON t.workspace_id = j.workspace_id
                AND t.id = j.tag_id
              WHERE
                j.workspace_id = $16
                AND j."company_id" = "c"."id"
            ),
            '[]'::json
          )
        )
      END AS company
    FROM
      companies AS c
    WHERE
      c.workspace_id = $17
      AND c.id IN (
        SELECT
          company_id
        FROM
          r
      )
  ),
  tag_records AS MATERIALIZED (
    SELECT
      t.id,
      json_build_object(
        'id',
        "t"."id",
        'name',
        "t"."name",
        'color',
        "t"."color",
        'active',
        "t"."active"
      ) AS tag,
      row_number() OVER (
        ORDER BY
          lower("t"."name"),
          "t"."name",
          "t"."id"
      ) AS position
    FROM
      tags AS t
    WHERE
      t.workspace_id = $18
      AND t.id IN (
        SELECT
          tag_id
        FROM
          tag_rows
      )
  )
SELECT
  ids.ord,
  complete.id IS NOT NULL AS complete,
  "lead"."id",
  "lead"."name",
  "lead"."job_title",
  "lead"."description",
  "lead"."gender",
  "lead"."language",
  "lead"."decision_maker",
  "lead"."stage",
  "lead"."source",
  "lead"."emails",
  "lead"."phones",
  "lead"."links",
  "lead"."locations",
  "lead"."custom_fields",
  "lead"."created_at",
  "lead"."updated_at",
  coalesce(
    (
      SELECT
        json_agg(
          tr.tag
          ORDER BY
            tr.position
        )
      FROM
        tag_records AS tr
      WHERE
        tr.id IN (
          SELECT
            tag_id
          FROM
            tag_rows
          WHERE
            tag_rows.ord = ids.ord
        )
    ),
    '[]'::json
  ) AS tags,
  (
    SELECT
      cr.company
    FROM
      company_records AS cr
    WHERE
      cr.id = lead.company_id
  ) AS company
FROM
  ids
  LEFT JOIN complete USING (ord)
  LEFT JOIN lead ON lead.id = ids.id
ORDER BY
  ids.ord;

-- NEW_LEAD_RECORDS_ACROSS_ALONE
WITH
  r AS (
    SELECT
      *
    FROM
      jsonb_to_recordset($1::jsonb) AS r (
        ord int,
        key_count int,
        workspace_id bigint,
        company_id bigint,
        name text,
        job_title text,
        description text,
        gender text,
        language text,
        decision_maker boolean,
        source text,
        emails jsonb,
        phones jsonb,
        links jsonb,
        locations jsonb,
        custom_fields jsonb
      )
  ),
  ids AS (
    SELECT
      r.ord,
      r.workspace_id,
      nextval(pg_get_serial_sequence('leads', 'id')) AS id
    FROM
      r
    ORDER BY
      r.ord
  ),
  lead AS (
    INSERT INTO
      leads (
        id,
        workspace_id,
        company_id,
        name,
        job_title,
        description,
        gender,
        language,
        decision_maker,
        source,
        stage,
        chargeable,
        emails,
        phones,
        links,
        locations,
        custom_fields
      )
    OVERRIDING SYSTEM VALUE
    SELECT
      ids.id,
      "r"."workspace_id",
      r.company_id,
      r.name,
      r.job_title,
      r.description,
      r.gender,
      r.language,
      coalesce(r.decision_maker, false),
      coalesce(r.source, 'api'),
      'new',
      false,
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.emails)
      ),
      ARRAY(
        SELECT
          jsonb_array_elements_text(r.phones)
      ),
      r.links,
      r.locations,
      r.custom_fields
    FROM
      r
      JOIN ids USING (ord)
    ORDER BY
      r.ord
    RETURNING
      *
  ),
  claimed AS (
    INSERT INTO
      lead_identities (workspace_id, kind, value, lead_id)
    SELECT
      "claiming"."workspace_id",
      k.kind,
      k.value,
      "claiming".id
    FROM
      unnest($2::int[], $3::text[], $4::text[]) AS k (ord, kind, value)
      JOIN ids AS "claiming" USING (ord)
    ORDER BY
      "claiming"."workspace_id",
      k.kind,
      k.value
    RETURNING
      lead_id
  ),
  claimed_count AS (
    SELECT
      lead_id,
      count(*) AS n
    FROM
      claimed
    GROUP BY
      lead_id
  ),
  complete AS (
    SELECT
      ids.*
    FROM
      ids
      JOIN r USING (ord)
      LEFT JOIN claimed_count AS c ON c.lead_id = ids.id
    WHERE
      r.key_count = coalesce(c.n, 0)
  ),
  tag_rows AS (
    SELECT
      *
    FROM
      unnest($5::int[], $6::bigint[]) AS t (ord, tag_id)
  ),
  tagged AS (
    INSERT INTO
      lead_tags (workspace_id, lead_id, tag_id)
    SELECT
      "complete"."workspace_id",
      complete.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN complete USING (ord)
    ON CONFLICT DO NOTHING
  ),
  queued AS (
    INSERT INTO
      outbox (workspace_id, topic, payload, trace_context)
    SELECT
      "l"."workspace_id",
      e.topic,
      CASE
        WHEN e.topic = 'lead.created' THEN jsonb_build_object('lead_id', l.id)
        ELSE e.payload
      END,
      ($7::text[]) [l.ord + 1]
    FROM
      unnest($8::int[], $9::text[], $10::jsonb[]) WITH ORDINALITY AS e (ord, topic, payload, n)
      JOIN "complete" AS l USING (ord)
    ORDER BY
      e.n
  ),
  counted AS (
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
      (
        SELECT
          "complete"."workspace_id"::bigint AS workspace_id,
          count(*) AS created,
          0 AS updated,
          0 AS skipped,
          0 AS failed
        FROM
          complete
        GROUP BY
          1
      ) AS c
    ORDER BY
      c.workspace_id
    ON CONFLICT (workspace_id, day, slot) DO UPDATE
    SET
      created = t.created + excluded.created,
      updated = t.updated + excluded.updated,
      skipped = t.skipped + excluded.skipped,
      failed = t.failed + excluded.failed
  ),
  company_records AS MATERIALIZED (
    SELECT
      c.id,
      CASE
        WHEN "c"."id" IS NULL THEN NULL
        ELSE json_build_object(
          'id',
          "c"."id",
          'name',
          "c"."name",
          'industry',
          "c"."industry",
          'size',
          "c"."size",
          'description',
          "c"."description",
          'status',
          "c"."status",
          'links',
          "c"."links",
          'created_at',
          to_char(
            "c"."created_at" AT TIME ZONE 'UTC',
            'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'
          ),
          'tags',
          coalesce(
            (
              SELECT
                json_agg(
                  json_build_object(
                    'id',
                    "t"."id",
                    'name',
                    "t"."name",
                    'color',
                    "t"."color",
                    'active',
                    "t"."active"
                  )
                  ORDER BY
                    lower("t"."name"),
                    "t"."name",
                    "t"."id"
                )
              FROM
                "company_tags" AS j
                JOIN tags AS t ON t.workspace_id = j.workspace_id
                AND t.id = j.tag_id
              WHERE
                j.workspace_id = "c"."workspace_id"
                AND j."company_id" = "c"."id"
            ),
            '[]'::json
          )
        )
      END AS company
    FROM
      (
        SELECT DISTINCT
          workspace_id,
          company_id
        FROM
          r
        WHERE
          company_id IS NOT NULL
      ) AS wanted
      CROSS JOIN LATERAL (
        SELECT
          *
        FROM
          companies
        WHERE
          workspace_id = wanted.workspace_id
          AND id = wanted.company_id
        OFFSET
          0
      ) AS c
  ),
  tag_records AS MATERIALIZED (
    SELECT
      t.id,
      json_build_object(
        'id',
        "t"."id",
        'name',
        "t"."name",
        'color',
        "t"."color",
        'active',
        "t"."active"
      ) AS tag,
      row_number() OVER (
        ORDER BY
          lower("t"."name"),
          "t"."name",
          "t"."id"
      ) AS position
    FROM
      (
        SELECT DISTINCT
          workspace_id,
          tag_id
        FROM
          tag_rows
          JOIN ids USING (ord)
      ) AS wanted
      CROSS JOIN LATERAL (
        SELECT
          *
        FROM
          tags
        WHERE
          workspace_id = wanted.workspace_id
          AND id = wanted.tag_id
        OFFSET
          0
      ) AS t
  )
SELECT
  ids.ord,
  complete.id IS NOT NULL AS complete,
  "lead"."id",
  "lead"."name",
  "lead"."job_title",
  "lead"."description",
  "lead"."gender",
  "lead"."language",
  "lead"."decision_maker",
  "lead"."stage",
  "lead"."source",
  "lead"."emails",
  "lead"."phones",
  "lead"."links",
  "lead"."locations",
  "lead"."custom_fields",
  "lead"."created_at",
  "lead"."updated_at",
  coalesce(
    (
      SELECT
        json_agg(
          tr.tag
          ORDER BY
            tr.position
        )
      FROM
        tag_records AS tr
      WHERE
        tr.id IN (
          SELECT
            tag_id
          FROM
            tag_rows
          WHERE
            tag_rows.ord = ids.ord
        )
    ),
    '[]'::json
  ) AS tags,
  (
    SELECT
      cr.company
    FROM
      company_records AS cr
    WHERE
      cr.id = lead.company_id
  ) AS company
FROM
  ids
  LEFT JOIN complete USING (ord)
  LEFT JOIN lead ON lead.id = ids.id
ORDER BY
  ids.ord;

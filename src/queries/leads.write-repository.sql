-- The prepared statements of src/leads/write-repository.ts, as sent (laid out by sql-formatter). Written by `npm run queries`: do not edit.

-- MERGE_INTO_LEADS
WITH
  r AS (
    SELECT
      *
    FROM
      jsonb_to_recordset($1::jsonb) AS r (
        ord int,
        lead_id bigint,
        name text,
        job_title text,
        description text,
        gender text,
        language text,
        decision_maker boolean,
        company_id bigint,
        fill_company_only boolean,
        emails jsonb,
        phones jsonb,
        links jsonb,
        location jsonb,
        locations jsonb,
        custom_fields jsonb
      )
  ),
  merged AS (
    UPDATE leads AS l
    SET
      name = m.name,
      job_title = coalesce(m.job_title, l.job_title),
      description = coalesce(m.description, l.description),
      gender = coalesce(m.gender, l.gender),
      language = coalesce(m.language, l.language),
      decision_maker = coalesce(m.decision_maker, l.decision_maker),
      company_id = CASE
        WHEN m.fill_company_only THEN coalesce(l.company_id, m.company_id)
        ELSE coalesce(m.company_id, l.company_id)
      END,
      emails = ARRAY(
        SELECT
          v
        FROM
          unnest(
            l.emails || ARRAY(
              SELECT
                jsonb_array_elements_text(m.emails)
            )
          ) WITH ORDINALITY AS t (v, n)
        GROUP BY
          v
        ORDER BY
          min(n)
        LIMIT
          10
      ),
      phones = ARRAY(
        SELECT
          v
        FROM
          unnest(
            l.phones || ARRAY(
              SELECT
                jsonb_array_elements_text(m.phones)
            )
          ) WITH ORDINALITY AS t (v, n)
        GROUP BY
          v
        ORDER BY
          min(n)
        LIMIT
          10
      ),
      links = l.links || coalesce(
        (
          SELECT
            jsonb_agg(n)
          FROM
            jsonb_array_elements(m.links) AS n
          WHERE
            NOT EXISTS (
              SELECT
                1
              FROM
                jsonb_array_elements(l.links) AS o
              WHERE
                o ->> 'url' = n ->> 'url'
            )
        ),
        '[]'::jsonb
      ),
      -- The one-element list comes in built (m.locations), not from jsonb_build_array (STABLE): Citus refuses a non-immutable function in a CASE of an UPDATE.
      locations = CASE
        WHEN m.location IS NULL THEN l.locations
        WHEN jsonb_array_length(l.locations) = 0 THEN m.locations
        ELSE jsonb_set(
          l.locations,
          '{0}',
          jsonb_strip_nulls(m.location) || jsonb_strip_nulls(l.locations -> 0)
        )
      END,
      custom_fields = l.custom_fields || m.custom_fields,
      updated_at = now()
    FROM
      (
        SELECT
          *
        FROM
          r
        ORDER BY
          r.lead_id
      ) AS m
    WHERE
      l.workspace_id = $2
      AND l.id = ANY ($3::bigint[])
      AND l.id = m.lead_id
    RETURNING
      m.ord,
      l.*
  ),
  claimed AS (
    INSERT INTO
      lead_identities (workspace_id, kind, value, lead_id)
    SELECT
      $4,
      k.kind,
      k.value,
      "claiming".id
    FROM
      unnest($5::int[], $6::text[], $7::text[]) AS k (ord, kind, value)
      JOIN merged AS "claiming" USING (ord)
    ORDER BY
      k.kind,
      k.value
    ON CONFLICT (workspace_id, kind, value) DO NOTHING
  ),
  tag_rows AS (
    SELECT
      *
    FROM
      unnest($8::int[], $9::bigint[]) WITH ORDINALITY AS t (ord, tag_id, n)
  ),
  tagged AS (
    INSERT INTO
      lead_tags (workspace_id, lead_id, tag_id)
    SELECT
      $10,
      merged.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN merged USING (ord)
    ORDER BY
      merged.id,
      tag_rows.tag_id
    ON CONFLICT (lead_id, tag_id, workspace_id) DO NOTHING
    RETURNING
      lead_id,
      tag_id
  ),
  queued AS (
    INSERT INTO
      outbox (workspace_id, topic, payload, trace_context)
    SELECT
      $11,
      e.topic,
      e.payload,
      ($12::text[]) [e.ord + 1]
    FROM
      (
        SELECT
          merged.ord,
          1 AS part,
          given.n,
          given.topic,
          given.payload
        FROM
          unnest($13::int[], $14::text[], $15::jsonb[]) WITH ORDINALITY AS given (ord, topic, payload, n)
          JOIN merged USING (ord)
        UNION ALL
        SELECT
          merged.ord,
          2,
          tag_rows.n,
          'lead.tag_added',
          jsonb_build_object(
            'lead_id',
            tagged.lead_id,
            'tag_id',
            tagged.tag_id
          )
        FROM
          tagged
          JOIN merged ON merged.id = tagged.lead_id
          JOIN tag_rows ON tag_rows.ord = merged.ord
          AND tag_rows.tag_id = tagged.tag_id
      ) AS e
    ORDER BY
      e.ord,
      e.part,
      e.n
  ),
  lead_tag_rows AS (
    -- The statement's snapshot does not see its own inserts: the tags it attached are added to those the leads had.
    SELECT
      lt.lead_id,
      lt.tag_id
    FROM
      lead_tags AS lt
    WHERE
      lt.workspace_id = $16
      AND lt.lead_id = ANY ($17::bigint[])
    UNION
    SELECT
      merged.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN merged USING (ord)
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
                j.workspace_id = $18
                AND j."company_id" = "c"."id"
            ),
            '[]'::json
          )
        )
      END AS company
    FROM
      companies AS c
    WHERE
      c.workspace_id = $19
      AND c.id IN (
        SELECT
          company_id
        FROM
          merged
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
      t.workspace_id = $20
      AND t.id IN (
        SELECT
          tag_id
        FROM
          lead_tag_rows
      )
  )
  -- Companies and tags through CTEs of their own, never a subquery correlated with the written rows: Citus runs this SELECT over the CTEs' results on the coordinator.
SELECT
  merged.ord,
  "merged"."id",
  "merged"."name",
  "merged"."job_title",
  "merged"."description",
  "merged"."gender",
  "merged"."language",
  "merged"."decision_maker",
  "merged"."stage",
  "merged"."source",
  "merged"."emails",
  "merged"."phones",
  "merged"."links",
  "merged"."locations",
  "merged"."custom_fields",
  "merged"."created_at",
  "merged"."updated_at",
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
            ltr.tag_id
          FROM
            lead_tag_rows AS ltr
          WHERE
            ltr.lead_id = merged.id
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
      cr.id = merged.company_id
  ) AS company
FROM
  merged
ORDER BY
  merged.ord;

-- MERGE_INTO_LEADS_ACROSS
WITH
  r AS (
    SELECT
      *
    FROM
      jsonb_to_recordset($1::jsonb) AS r (
        workspace_id bigint,
        ord int,
        lead_id bigint,
        name text,
        job_title text,
        description text,
        gender text,
        language text,
        decision_maker boolean,
        company_id bigint,
        fill_company_only boolean,
        emails jsonb,
        phones jsonb,
        links jsonb,
        location jsonb,
        locations jsonb,
        custom_fields jsonb
      )
  ),
  merged AS (
    UPDATE leads AS l
    SET
      name = m.name,
      job_title = coalesce(m.job_title, l.job_title),
      description = coalesce(m.description, l.description),
      gender = coalesce(m.gender, l.gender),
      language = coalesce(m.language, l.language),
      decision_maker = coalesce(m.decision_maker, l.decision_maker),
      company_id = CASE
        WHEN m.fill_company_only THEN coalesce(l.company_id, m.company_id)
        ELSE coalesce(m.company_id, l.company_id)
      END,
      emails = ARRAY(
        SELECT
          v
        FROM
          unnest(
            l.emails || ARRAY(
              SELECT
                jsonb_array_elements_text(m.emails)
            )
          ) WITH ORDINALITY AS t (v, n)
        GROUP BY
          v
        ORDER BY
          min(n)
        LIMIT
          10
      ),
      phones = ARRAY(
        SELECT
          v
        FROM
          unnest(
            l.phones || ARRAY(
              SELECT
                jsonb_array_elements_text(m.phones)
            )
          ) WITH ORDINALITY AS t (v, n)
        GROUP BY
          v
        ORDER BY
          min(n)
        LIMIT
          10
      ),
      links = l.links || coalesce(
        (
          SELECT
            jsonb_agg(n)
          FROM
            jsonb_array_elements(m.links) AS n
          WHERE
            NOT EXISTS (
              SELECT
                1
              FROM
                jsonb_array_elements(l.links) AS o
              WHERE
                o ->> 'url' = n ->> 'url'
            )
        ),
        '[]'::jsonb
      ),
      -- The one-element list comes in built (m.locations), not from jsonb_build_array (STABLE): Citus refuses a non-immutable function in a CASE of an UPDATE.
      locations = CASE
        WHEN m.location IS NULL THEN l.locations
        WHEN jsonb_array_length(l.locations) = 0 THEN m.locations
        ELSE jsonb_set(
          l.locations,
          '{0}',
          jsonb_strip_nulls(m.location) || jsonb_strip_nulls(l.locations -> 0)
        )
      END,
      custom_fields = l.custom_fields || m.custom_fields,
      updated_at = now()
    FROM
      (
        SELECT
          *
        FROM
          r
        ORDER BY
          r.lead_id
      ) AS m
    WHERE
      l.workspace_id = "m"."workspace_id"
      AND l.id = ANY ($2::bigint[])
      AND l.id = m.lead_id
    RETURNING
      m.ord,
      l.*
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
      unnest($3::int[], $4::text[], $5::text[]) AS k (ord, kind, value)
      JOIN merged AS "claiming" USING (ord)
    ORDER BY
      "claiming"."workspace_id",
      k.kind,
      k.value
    ON CONFLICT (workspace_id, kind, value) DO NOTHING
  ),
  tag_rows AS (
    SELECT
      *
    FROM
      unnest($6::int[], $7::bigint[]) WITH ORDINALITY AS t (ord, tag_id, n)
  ),
  tagged AS (
    INSERT INTO
      lead_tags (workspace_id, lead_id, tag_id)
    SELECT
      "merged"."workspace_id",
      merged.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN merged USING (ord)
    ORDER BY
      merged.id,
      tag_rows.tag_id
    ON CONFLICT (lead_id, tag_id, workspace_id) DO NOTHING
    RETURNING
      lead_id,
      tag_id
  ),
  queued AS (
    INSERT INTO
      outbox (workspace_id, topic, payload, trace_context)
    SELECT
      "e"."workspace_id",
      e.topic,
      e.payload,
      ($8::text[]) [e.ord + 1]
    FROM
      (
        SELECT
          "merged"."workspace_id",
          merged.ord,
          1 AS part,
          given.n,
          given.topic,
          given.payload
        FROM
          unnest($9::int[], $10::text[], $11::jsonb[]) WITH ORDINALITY AS given (ord, topic, payload, n)
          JOIN merged USING (ord)
        UNION ALL
        SELECT
          "merged"."workspace_id",
          merged.ord,
          2,
          tag_rows.n,
          'lead.tag_added',
          jsonb_build_object(
            'lead_id',
            tagged.lead_id,
            'tag_id',
            tagged.tag_id
          )
        FROM
          tagged
          JOIN merged ON merged.id = tagged.lead_id
          JOIN tag_rows ON tag_rows.ord = merged.ord
          AND tag_rows.tag_id = tagged.tag_id
      ) AS e
    ORDER BY
      e.ord,
      e.part,
      e.n
  ),
  lead_tag_rows AS (
    -- The statement's snapshot does not see its own inserts: the tags it attached are added to those the leads had.
    SELECT
      "lt"."workspace_id",
      lt.lead_id,
      lt.tag_id
    FROM
      lead_tags AS lt
    WHERE
      lt.workspace_id = ANY ($12::bigint[])
      AND lt.lead_id = ANY ($13::bigint[])
    UNION
    SELECT
      "merged"."workspace_id",
      merged.id,
      tag_rows.tag_id
    FROM
      tag_rows
      JOIN merged USING (ord)
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
          merged
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
          lead_tag_rows
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
  -- Companies and tags through CTEs of their own, never a subquery correlated with the written rows: Citus runs this SELECT over the CTEs' results on the coordinator.
SELECT
  merged.ord,
  "merged"."id",
  "merged"."name",
  "merged"."job_title",
  "merged"."description",
  "merged"."gender",
  "merged"."language",
  "merged"."decision_maker",
  "merged"."stage",
  "merged"."source",
  "merged"."emails",
  "merged"."phones",
  "merged"."links",
  "merged"."locations",
  "merged"."custom_fields",
  "merged"."created_at",
  "merged"."updated_at",
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
            ltr.tag_id
          FROM
            lead_tag_rows AS ltr
          WHERE
            ltr.lead_id = merged.id
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
      cr.id = merged.company_id
  ) AS company
FROM
  merged
ORDER BY
  merged.ord;

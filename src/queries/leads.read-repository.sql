-- The prepared statements of src/leads/read-repository.ts, as sent (laid out by sql-formatter). Written by `npm run queries`: do not edit.

-- LEAD_RECORDS
SELECT
  "l"."id",
  "l"."name",
  "l"."job_title",
  "l"."description",
  "l"."gender",
  "l"."language",
  "l"."decision_maker",
  "l"."stage",
  "l"."source",
  "l"."emails",
  "l"."phones",
  "l"."links",
  "l"."locations",
  "l"."custom_fields",
  "l"."created_at",
  "l"."updated_at",
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
        "lead_tags" AS j
        JOIN tags AS t ON t.workspace_id = j.workspace_id
        AND t.id = j.tag_id
      WHERE
        j.workspace_id = $1
        AND j."lead_id" = "l"."id"
    ),
    '[]'::json
  ) AS tags,
  (
    SELECT
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
                j.workspace_id = $2
                AND j."company_id" = "c"."id"
            ),
            '[]'::json
          )
        )
      END
    FROM
      companies AS c
    WHERE
      c.workspace_id = $3
      AND c.id = "l"."company_id"
  ) AS company
FROM
  leads AS l
WHERE
  l.workspace_id = $4
  AND l.id = ANY ($5::bigint[]);

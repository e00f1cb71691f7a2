-- The prepared statements of src/leads/lookup-repository.ts, as sent (laid out by sql-formatter). Written by `npm run queries`: do not edit.

-- IDENTITY_MATCHES
SELECT
  m.kind,
  m.value,
  m.lead_id
FROM
  (
    SELECT
      k.n,
      i.workspace_id,
      i.kind,
      i.value,
      i.lead_id
    FROM
      unnest($1::text[], $2::text[]) WITH ORDINALITY AS k (kind, value, n)
      CROSS JOIN LATERAL (
        SELECT
          i.workspace_id,
          i.kind,
          i.value,
          i.lead_id
        FROM
          lead_identities AS i
        WHERE
          i.workspace_id = $3
          AND i.kind = k.kind
          AND i.value = k.value
        OFFSET
          0
      ) AS i
  ) AS m
ORDER BY
  m.n;

-- INTAKE_LOOKUP
SELECT
  (
    SELECT
      coalesce(
        json_agg(
          json_build_object(
            'id',
            "tags"."id",
            'name',
            "tags"."name",
            'color',
            "tags"."color",
            'active',
            "tags"."active"
          )
        ),
        '[]'::json
      )
    FROM
      tags
    WHERE
      workspace_id = $1
      AND (
        id = ANY ($2::bigint[])
        OR lower(name) = ANY ($3::text[])
      )
  ) AS tags,
  (
    SELECT
      coalesce(
        json_agg(
          json_build_object(
            'kind',
            m.kind,
            'value',
            m.value,
            'lead_id',
            m.lead_id
          )
          ORDER BY
            m.n
        ),
        '[]'::json
      )
    FROM
      (
        SELECT
          k.n,
          i.workspace_id,
          i.kind,
          i.value,
          i.lead_id
        FROM
          unnest($4::text[], $5::text[]) WITH ORDINALITY AS k (kind, value, n)
          CROSS JOIN LATERAL (
            SELECT
              i.workspace_id,
              i.kind,
              i.value,
              i.lead_id
            FROM
              lead_identities AS i
            WHERE
              i.workspace_id = $6
              AND i.kind = k.kind
              AND i.value = k.value
            OFFSET
              0
          ) AS i
      ) AS m
  ) AS matches,
  (
    SELECT
      id
    FROM
      companies
    WHERE
      workspace_id = $7
      AND id = $8::bigint
  ) AS "companyById",
  (
    SELECT
      id
    FROM
      companies
    WHERE
      workspace_id = $9
      AND domain = $10::text
  ) AS "companyByDomain",
  (
    SELECT
      id
    FROM
      companies
    WHERE
      workspace_id = $11
      AND lower(name) = $12::text
    ORDER BY
      id
    LIMIT
      1
  ) AS "companyByName";

-- BATCH_LOOKUP
SELECT
  (
    SELECT
      coalesce(
        json_agg(
          json_build_object(
            'id',
            "tags"."id",
            'name',
            "tags"."name",
            'color',
            "tags"."color",
            'active',
            "tags"."active"
          )
        ),
        '[]'::json
      )
    FROM
      tags
    WHERE
      workspace_id = $1
      AND (
        id = ANY ($2::bigint[])
        OR lower(name) = ANY ($3::text[])
      )
  ) AS tags,
  (
    SELECT
      coalesce(
        json_agg(
          json_build_object(
            'kind',
            m.kind,
            'value',
            m.value,
            'lead_id',
            m.lead_id
          )
          ORDER BY
            m.n
        ),
        '[]'::json
      )
    FROM
      (
        SELECT
          k.n,
          i.workspace_id,
          i.kind,
          i.value,
          i.lead_id
        FROM
          unnest($4::text[], $5::text[]) WITH ORDINALITY AS k (kind, value, n)
          CROSS JOIN LATERAL (
            SELECT
              i.workspace_id,
              i.kind,
              i.value,
              i.lead_id
            FROM
              lead_identities AS i
            WHERE
              i.workspace_id = $6
              AND i.kind = k.kind
              AND i.value = k.value
            OFFSET
              0
          ) AS i
      ) AS m
  ) AS matches,
  (
    SELECT
      coalesce(
        json_agg(json_build_object('id', id, 'domain', domain)),
        '[]'::json
      )
    FROM
      companies
    WHERE
      workspace_id = $7
      AND (
        domain = ANY ($8::text[])
        OR id = ANY ($9::bigint[])
      )
  ) AS companies;

-- LOOKUPS_ACROSS_WORKSPACES
SELECT
  (
    SELECT
      coalesce(
        json_agg(
          json_build_object(
            'workspace_id',
            t.workspace_id,
            'tag',
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
          )
        ),
        '[]'::json
      )
    FROM
      (
        SELECT
          r.workspace_id,
          r.id
        FROM
          unnest($1::bigint[], $2::bigint[]) AS r (workspace_id, id)
        UNION
        SELECT
          named.workspace_id,
          named.id
        FROM
          unnest($3::bigint[], $4::text[]) AS r (workspace_id, name)
          CROSS JOIN LATERAL (
            SELECT
              workspace_id,
              id
            FROM
              tags
            WHERE
              workspace_id = r.workspace_id
              AND lower(name) = r.name
            OFFSET
              0
          ) AS named
      ) AS wanted
      CROSS JOIN LATERAL (
        SELECT
          *
        FROM
          tags
        WHERE
          workspace_id = wanted.workspace_id
          AND id = wanted.id
        OFFSET
          0
      ) AS t
  ) AS tags,
  (
    SELECT
      coalesce(
        json_agg(
          json_build_object(
            'workspace_id',
            m.workspace_id,
            'kind',
            m.kind,
            'value',
            m.value,
            'lead_id',
            m.lead_id
          )
          ORDER BY
            m.n
        ),
        '[]'::json
      )
    FROM
      (
        SELECT
          k.n,
          i.workspace_id,
          i.kind,
          i.value,
          i.lead_id
        FROM
          unnest($5::bigint[], $6::text[], $7::text[]) WITH ORDINALITY AS k (workspace_id, kind, value, n)
          CROSS JOIN LATERAL (
            SELECT
              i.workspace_id,
              i.kind,
              i.value,
              i.lead_id
            FROM
              lead_identities AS i
            WHERE
              i.workspace_id = k.workspace_id
              AND i.kind = k.kind
              AND i.value = k.value
            OFFSET
              0
          ) AS i
      ) AS m
  ) AS matches,
  (
    SELECT
      coalesce(
        json_agg(
          json_build_object(
            'id',
            c.id,
            'domain',
            c.domain,
            'workspace_id',
            c.workspace_id
          )
        ),
        '[]'::json
      )
    FROM
      (
        SELECT
          r.workspace_id,
          r.id
        FROM
          unnest($8::bigint[], $9::bigint[]) AS r (workspace_id, id)
        UNION
        SELECT
          by_domain.workspace_id,
          by_domain.id
        FROM
          unnest($10::bigint[], $11::text[]) AS r (workspace_id, domain)
          CROSS JOIN LATERAL (
            SELECT
              workspace_id,
              id
            FROM
              companies
            WHERE
              workspace_id = r.workspace_id
              AND domain = r.domain
            OFFSET
              0
          ) AS by_domain
      ) AS wanted
      CROSS JOIN LATERAL (
        SELECT
          *
        FROM
          companies
        WHERE
          workspace_id = wanted.workspace_id
          AND id = wanted.id
        OFFSET
          0
      ) AS c
  ) AS companies;

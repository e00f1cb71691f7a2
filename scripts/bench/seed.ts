import pg from 'pg';
import { scopeValues } from '../../generated/api.js';
import { generateToken } from '../../src/api-keys/tokens.js';

/**
 * The people seeded by SQL, numbered n = 1, 2, ...: name "Seed Person <n>", email
 * seed<n>@seed<n % 1000>.example, phone 415 000 0000 + n, LinkedIn /in/seed-<n>.
 * load.ts sends the same keys as "existing" people.
 */
export const seededPerson = (n: number) => ({ name: `Seed Person ${n}`, email: `seed${n}@seed${n % 1000}.example` });

const CHUNK = 100_000;

// One statement per chunk: the lead rows and their three match keys, set-based, the same people
// in each workspace given. The bench database is scratch and every reference is correct by
// construction (existing workspaces, lead ids
// from the same statement), so the session skips foreign-key triggers
// (session_replication_role = replica): with them, each of the 3 million identity rows costs
// a per-row lookup of its lead and workspace, about half the seeding time.
const SEED_CHUNK = `
  WITH created AS (
    INSERT INTO leads (workspace_id, name, source, emails, phones, links, chargeable)
    SELECT w, 'Seed Person ' || n, 'bench',
      ARRAY['seed' || n || '@seed' || (n % 1000) || '.example'],
      ARRAY[(4150000000 + n)::text],
      ('[{"type":"linkedin","url":"https://www.linkedin.com/in/seed-' || n || '"}]')::jsonb,
      false
    FROM unnest($1::bigint[]) AS w CROSS JOIN generate_series($2::int, $3::int) AS n
    RETURNING id, workspace_id, emails[1] AS email, phones[1] AS phone, 'seed-' || substr(name, 13) AS handle
  ), identities AS (
    INSERT INTO lead_identities (workspace_id, kind, value, lead_id)
    SELECT created.workspace_id, keys.kind, keys.value, created.id FROM created
    CROSS JOIN LATERAL (VALUES ('email', email), ('phone', phone), ('linkedin', handle)) AS keys (kind, value)
  )
  SELECT min(id) AS first, max(id) AS last FROM created
`;

/**
 * Seeds people `from`..`to` into a workspace with their match keys, in chunks of 100,000 on
 * `parallel` connections at once, then VACUUM ANALYZEs. Returns the range of lead ids created.
 */
export async function seedLeads(
  connectionString: string,
  workspaceId: number | readonly number[],
  from: number,
  to: number,
  parallel = 2,
): Promise<{ firstId: number; lastId: number; insertSeconds: number; vacuumSeconds: number }> {
  const started = performance.now();
  const workspaceIds = typeof workspaceId === 'number' ? [workspaceId] : [...workspaceId];
  const chunks: Array<[number, number]> = [];
  const step = Math.max(1, Math.floor(CHUNK / workspaceIds.length));
  for (let start = from; start <= to; start += step) chunks.push([start, Math.min(to, start + step - 1)]);
  let firstId = Number.MAX_SAFE_INTEGER;
  let lastId = 0;
  const seedOn = async () => {
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      await client.query('SET session_replication_role = replica');
      for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) {
        const { rows } = await client.query<{ first: string; last: string }>(SEED_CHUNK, [workspaceIds, chunk[0], chunk[1]]);
        firstId = Math.min(firstId, Number(rows[0]!.first));
        lastId = Math.max(lastId, Number(rows[0]!.last));
      }
    } finally {
      await client.end();
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, chunks.length) }, seedOn));
  const inserted = performance.now();
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    // VACUUM as well: a workspace that grew to this size has been vacuumed, and autovacuum
    // catching up on a million fresh rows would otherwise compete with the next scenario.
    await client.query('VACUUM (ANALYZE) leads, lead_identities');
  } finally {
    await client.end();
  }
  return { firstId, lastId, insertSeconds: (inserted - started) / 1000, vacuumSeconds: (performance.now() - inserted) / 1000 };
}

/** A workspace of the many-workspace scenarios, with the token of its one key. */
export interface BenchWorkspace {
  workspaceId: number;
  token: string;
}

// The many-workspace scenarios' workspaces in one statement: each with an admin user, a key
// holding every scope (tokens made here, only their hashes stored, as the service stores
// them), and a copy of `template`'s companies and tags, so that their new people find the
// same 500 companies and 11 tags as scenario 3's (the template is primed through the service).
const SEED_WORKSPACES = `
  WITH wanted AS (
    SELECT n, prefix, hash FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY AS k (prefix, hash, n)
  ), created AS (
    INSERT INTO workspaces (name) SELECT 'Bench workspace ' || n FROM wanted ORDER BY n RETURNING id, name
  ), numbered AS (
    SELECT created.id, wanted.* FROM created JOIN wanted ON created.name = 'Bench workspace ' || wanted.n
  ), admins AS (
    INSERT INTO users (workspace_id, email, role) SELECT id, 'admin+' || id || '@bench.example', 'admin' FROM numbered
    RETURNING id, workspace_id
  ), keys AS (
    INSERT INTO api_keys (workspace_id, user_id, name, prefix, token_hash, scopes)
    SELECT numbered.id, admins.id, 'Bench key', numbered.prefix, numbered.hash, $4::text[]
    FROM numbered JOIN admins ON admins.workspace_id = numbered.id
  ), companies AS (
    INSERT INTO companies (workspace_id, name, domain, industry, size, description, status, links, emails, phones, locations)
    SELECT numbered.id, c.name, c.domain, c.industry, c.size, c.description, c.status, c.links, c.emails, c.phones, c.locations
    FROM numbered CROSS JOIN companies AS c WHERE c.workspace_id = $3
  ), tags AS (
    INSERT INTO tags (workspace_id, name, color, active)
    SELECT numbered.id, t.name, t.color, t.active FROM numbered CROSS JOIN tags AS t WHERE t.workspace_id = $3
  )
  SELECT id, n FROM numbered ORDER BY n
`;

/** `count` workspaces, one key each, with `template`'s companies and tags (see SEED_WORKSPACES). */
export async function seedWorkspaces(connectionString: string, count: number, template: number): Promise<BenchWorkspace[]> {
  const tokens = Array.from({ length: count }, () => generateToken());
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string; n: string }>(SEED_WORKSPACES, [
      tokens.map((token) => token.prefix),
      tokens.map((token) => token.hash),
      template,
      [...scopeValues],
    ]);
    // What the service's key statements send (src/api-keys/repository.ts): its processes learn
    // the new prefixes at once (on Citus no trigger would tell them).
    await client.query("SELECT pg_notify('api_key_changed', p) FROM unnest($1::text[]) AS p", [tokens.map((token) => token.prefix)]);
    return rows.map((row) => ({ workspaceId: Number(row.id), token: tokens[Number(row.n) - 1]!.token }));
  } finally {
    await client.end();
  }
}

import pg from 'pg';

/**
 * The people seeded by SQL, numbered n = 1, 2, ...: name "Seed Person <n>", email
 * seed<n>@seed<n % 1000>.example, phone 415 000 0000 + n, LinkedIn /in/seed-<n>.
 * load.ts sends the same keys as "existing" people.
 */
export const seededPerson = (n: number) => ({ name: `Seed Person ${n}`, email: `seed${n}@seed${n % 1000}.example` });

const CHUNK = 100_000;

// One statement per chunk: the lead rows and their three match keys, set-based. The bench
// database is scratch and every reference is correct by construction (one workspace, lead ids
// from the same statement), so the session skips foreign-key triggers
// (session_replication_role = replica): with them, each of the 3 million identity rows costs
// a per-row lookup of its lead and workspace, about half the seeding time.
const SEED_CHUNK = `
  WITH created AS (
    INSERT INTO leads (workspace_id, name, source, emails, phones, links, chargeable)
    SELECT $1, 'Seed Person ' || n, 'bench',
      ARRAY['seed' || n || '@seed' || (n % 1000) || '.example'],
      ARRAY[(4150000000 + n)::text],
      ('[{"type":"linkedin","url":"https://www.linkedin.com/in/seed-' || n || '"}]')::jsonb,
      false
    FROM generate_series($2::int, $3::int) AS n
    RETURNING id, emails[1] AS email, phones[1] AS phone, 'seed-' || substr(name, 13) AS handle
  ), identities AS (
    INSERT INTO lead_identities (workspace_id, kind, value, lead_id)
    SELECT $1, keys.kind, keys.value, created.id FROM created
    CROSS JOIN LATERAL (VALUES ('email', email), ('phone', phone), ('linkedin', handle)) AS keys (kind, value)
  )
  SELECT min(id) AS first, max(id) AS last FROM created
`;

/**
 * Seeds people `from`..`to` into a workspace with their match keys, in chunks of 100,000 on
 * `parallel` connections at once, then VACUUM ANALYZEs. Returns the range of lead ids created.
 */
export async function seedLeads(
  connectionString: string, workspaceId: number, from: number, to: number, parallel = 2,
): Promise<{ firstId: number; lastId: number; insertSeconds: number; vacuumSeconds: number }> {
  const started = performance.now();
  const chunks: Array<[number, number]> = [];
  for (let start = from; start <= to; start += CHUNK) chunks.push([start, Math.min(to, start + CHUNK - 1)]);
  let firstId = Number.MAX_SAFE_INTEGER;
  let lastId = 0;
  const seedOn = async () => {
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      await client.query('SET session_replication_role = replica');
      for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) {
        const { rows } = await client.query<{ first: string; last: string }>(SEED_CHUNK, [workspaceId, chunk[0], chunk[1]]);
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

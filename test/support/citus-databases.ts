import pg from 'pg';
import { databaseUrl } from '../../scripts/database-url.js';

// On a Citus coordinator a database is made on every node (each with the extension) and the
// coordinator is told where its workers are; a clone of a template would not be (its shards
// live on the workers, in databases of the template's name). So a run against Citus migrates
// a few databases, one per jest worker at a time, and empties them between test files.

export interface CitusNode {
  host: string;
  port: number;
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** Whether the server behind `adminUrl` is a Citus coordinator (the extension is in its database). */
export async function isCitusCoordinator(adminUrl: string): Promise<boolean> {
  return withClient(adminUrl, async (client) => (await client.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).rowCount === 1);
}

/** The worker nodes the coordinator's own database knows. */
export async function citusWorkers(adminUrl: string): Promise<CitusNode[]> {
  return withClient(
    adminUrl,
    async (client) =>
      (
        await client.query<{ host: string; port: number }>(
          "SELECT nodename AS host, nodeport AS port FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' ORDER BY nodeid",
        )
      ).rows,
  );
}

const nodeUrl = (adminUrl: string, node: CitusNode) => {
  const url = new URL(adminUrl);
  url.hostname = node.host;
  url.port = String(node.port);
  return url.toString();
};

/**
 * Registers a worker in the database. On a fresh cluster the first `CREATE EXTENSION citus` of
 * a worker turns its SSL on and reloads it, and a coordinator connection made meanwhile fails
 * ("failure on connection marked as essential"): asked again, it succeeds.
 */
async function addNode(client: pg.Client, node: CitusNode): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await client.query('SELECT citus_add_node($1, $2)', [node.host, node.port]);
      return;
    } catch (error) {
      if (attempt >= 5 || !/failure on connection marked as essential/.test((error as Error).message)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

/** Creates `name` on the coordinator and every worker, with the extension, and registers the workers in it. */
export async function createCitusDatabase(adminUrl: string, name: string): Promise<string> {
  const workers = await citusWorkers(adminUrl);
  for (const url of [adminUrl, ...workers.map((node) => nodeUrl(adminUrl, node))]) {
    await withClient(url, async (client) => {
      await client.query(`CREATE DATABASE "${name}"`);
      // As the embedded test clusters run with fsync off: a test database is thrown away, so
      // its commits need not wait for the disk of every node they touch.
      await client.query(`ALTER DATABASE "${name}" SET synchronous_commit = off`);
    });
    await withClient(databaseUrl(url, name), (client) => client.query('CREATE EXTENSION citus'));
  }
  const coordinator = new URL(adminUrl);
  await withClient(databaseUrl(adminUrl, name), async (client) => {
    await client.query('SELECT citus_set_coordinator_host($1, $2)', [coordinator.hostname, Number(coordinator.port || 5432)]);
    for (const node of workers) await addNode(client, node);
  });
  return databaseUrl(adminUrl, name);
}

/** Drops the databases whose names start with `prefix` on every node. */
export async function dropCitusDatabases(adminUrl: string, prefix: string): Promise<void> {
  const workers = await citusWorkers(adminUrl);
  for (const url of [adminUrl, ...workers.map((node) => nodeUrl(adminUrl, node))]) {
    await withClient(url, async (client) => {
      const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${prefix}%`]);
      for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    });
  }
}

/** Empties every table of the service's schema (not the migrations' bookkeeping). */
export async function emptyDatabase(url: string): Promise<void> {
  await withClient(url, async (client) => {
    const { rows } = await client.query<{ table: string }>("SELECT quote_ident(tablename) AS table FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'kysely%'");
    if (rows.length > 0) await client.query(`TRUNCATE ${rows.map((row) => row.table).join(', ')} CASCADE`);
  });
}

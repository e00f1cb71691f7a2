import pg from 'pg';
import { eventually } from './eventually.js';
import { readTestEnvironment } from './env.js';

/**
 * Watches the statements other connections run on one database, live from pg_stat_activity
 * (each connection's `query_start` is the start of its latest statement). pg_stat_database's
 * transaction counters would do too, but a busy connection reports them up to 10 s late. On
 * Citus the maintenance daemon's own connections (`citus_internal`: deadlock detection every
 * two seconds, prepared-transaction recovery) are client backends too, and not counted.
 */
export class StatementWatch {
  private marked = new Map<number, string>();

  private constructor(private readonly client: pg.Client) {}

  static async open(databaseUrl: string): Promise<StatementWatch> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return new StatementWatch(client);
  }

  /** Remembers where every connection stands now. */
  async mark(): Promise<void> {
    this.marked = await this.latest();
  }

  /**
   * The connections that started a statement since mark() (a connection opened since counts
   * too). This watch's own statements are never counted.
   */
  async connectionsWithStatementsSinceMark(): Promise<number> {
    const now = await this.latest();
    return [...now].filter(([pid, started]) => this.marked.get(pid) !== started).length;
  }

  close(): Promise<void> {
    return this.client.end();
  }

  private async latest(): Promise<Map<number, string>> {
    const { rows } = await this.client.query<{ pid: number; query_start: string | null }>(`
      SELECT pid, query_start::text FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
        AND application_name NOT LIKE 'citus\\_internal%'
    `);
    return new Map(rows.map((row) => [row.pid, row.query_start ?? '']));
  }
}

/**
 * Resolves once a statement whose text contains `fragment` waits on a lock in the pool's
 * database. Asked from another connection of the pool: a transaction sees pg_stat_activity
 * as of its first look.
 */
export async function lockWaitOf(pool: pg.Pool, fragment: string, timeoutMs = 5000): Promise<void> {
  await eventually(async () => {
    // On Citus the statement waits on a worker node: citus_lock_waits reports it by its coordinator query.
    const { rows } = await pool.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1
      ${readTestEnvironment().citus ? 'UNION ALL SELECT 1 FROM citus_lock_waits WHERE blocked_statement LIKE $1' : ''}`,
      [`%${fragment}%`],
    );
    return rows.length > 0;
  }, timeoutMs);
}

/**
 * The statements `work` makes one pool send, in order: each client the pool hands out while
 * `work` runs gets its own counting `query` (an instance property over the prototype's, taken
 * away afterwards), so nothing else in the process (other pools, other test files' apps) is
 * touched or counted.
 */
export async function statementsOf<T>(pool: pg.Pool, work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const { result, sent } = await statementsSentBy(pool, work);
  return { result, statements: sent.map((statement) => statement.text) };
}

/** statementsOf with each statement's parameters. */
export async function statementsSentBy<T>(pool: pg.Pool, work: () => Promise<T>): Promise<{ result: T; sent: Array<{ text: string; values: unknown[] }> }> {
  const sent: Array<{ text: string; values: unknown[] }> = [];
  const counted = new Set<pg.PoolClient>();
  const count = (client: pg.PoolClient) => {
    if (counted.has(client)) return;
    counted.add(client);
    const query = client.query;
    client.query = function countedQuery(this: pg.PoolClient, ...args: unknown[]) {
      const [text, values] = args;
      if (typeof text === 'string') sent.push({ text, values: Array.isArray(values) ? values : [] });
      else sent.push({ text: (text as { text: string }).text, values: (text as { values?: unknown[] }).values ?? [] });
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
  };
  pool.on('acquire', count);
  try {
    return { result: await work(), sent };
  } finally {
    pool.off('acquire', count);
    for (const client of counted) delete (client as Partial<pg.PoolClient>).query;
  }
}

// `--db-accounting`: what the database did over a window of a scenario, divided by what the
// window delivered or answered: statements (pg_stat_statements, when the server preloads it:
// calls, rows, execution time, WAL), row versions written per table (pg_stat_user_tables:
// inserts, updates and how many were HOT) and the cluster's WAL. The bench's own statements
// (its samplers') are left out. For finding what a delivery costs PostgreSQL, not a target.
import type pg from 'pg';

interface Statement {
  query: string;
  calls: number;
  rows: number;
  ms: number;
  walBytes: number;
}
interface Table {
  ins: number;
  upd: number;
  hot: number;
  del: number;
}
interface Snapshot {
  at: number;
  statements: Map<string, Statement> | null;
  tables: Map<string, Table>;
  walBytes: number;
}

// Table counters reach pg_stat_user_tables when a backend flushes them: at most once a second while
// busy, within 10 s once idle (PostgreSQL 15).
const STATS_FLUSH_MS = 11_000;

const OWN = `query NOT LIKE '%pg_stat_%' AND query NOT LIKE '%FROM outbox WHERE processed_at IS NULL AND topic IN%'`;

export class DbAccounting {
  private constructor(
    private readonly pool: pg.Pool,
    private readonly statements: boolean,
  ) {}

  static async open(pool: pg.Pool): Promise<DbAccounting> {
    const statements = await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').then(
      () => pool.query('SELECT 1 FROM pg_stat_statements LIMIT 1').then(() => true),
      () => false,
    );
    return new DbAccounting(pool, statements);
  }

  /** Waits for the backends' table counters, then reads every counter. */
  async snapshot(): Promise<Snapshot> {
    await new Promise((resolve) => setTimeout(resolve, STATS_FLUSH_MS));
    const at = performance.now();
    const tables = new Map(
      (
        await this.pool.query<Table & { relname: string }>('SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del FROM pg_stat_user_tables')
      ).rows.map((row) => [row.relname, { ins: Number(row.ins), upd: Number(row.upd), hot: Number(row.hot), del: Number(row.del) }]),
    );
    const walBytes = Number((await this.pool.query<{ wal_bytes: string }>('SELECT wal_bytes FROM pg_stat_wal')).rows[0]!.wal_bytes);
    const statements = this.statements
      ? new Map(
          (
            await this.pool.query<{ id: string; query: string; calls: string; rows: string; ms: number; wal_bytes: string }>(
              `SELECT queryid::text AS id, regexp_replace(left(query, 300), '\\s+', ' ', 'g') AS query, calls, rows, total_exec_time AS ms, wal_bytes
               FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND ${OWN}`,
            )
          ).rows.map((row) => [row.id, { query: row.query, calls: Number(row.calls), rows: Number(row.rows), ms: row.ms, walBytes: Number(row.wal_bytes) }]),
        )
      : null;
    return { at, statements, tables, walBytes };
  }

  /** What happened between two snapshots, per `unit` (deliveries, answers), as lines for the log. */
  static lines(name: string, before: Snapshot, after: Snapshot, units: number, unit: string): string[] {
    const per = (value: number) => (value / Math.max(units, 1)).toFixed(3);
    const lines = [`db accounting, ${name}: ${units} ${unit} in ${((after.at - before.at) / 1000).toFixed(1)} s; per ${unit}:`];
    const tables = [...after.tables]
      .map(([table, now]) => {
        const then = before.tables.get(table) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
        return { table, ins: now.ins - then.ins, upd: now.upd - then.upd, hot: now.hot - then.hot, del: now.del - then.del };
      })
      .filter((row) => row.ins + row.upd + row.del > 0)
      .sort((a, b) => b.ins + b.upd + b.del - (a.ins + a.upd + a.del));
    for (const row of tables) lines.push(`  rows ${row.table}: inserted ${per(row.ins)}, updated ${per(row.upd)} (HOT ${per(row.hot)}), deleted ${per(row.del)}`);
    lines.push(`  WAL bytes (cluster): ${per(after.walBytes - before.walBytes)}`);
    if (!after.statements || !before.statements) return [...lines, '  statements: pg_stat_statements is not preloaded on this server'];
    const moved = [...after.statements]
      .map(([id, now]) => {
        const then = before.statements!.get(id) ?? { calls: 0, rows: 0, ms: 0, walBytes: 0 };
        return { query: now.query, calls: now.calls - then.calls, rows: now.rows - then.rows, ms: now.ms - then.ms, walBytes: now.walBytes - then.walBytes };
      })
      .filter((row) => row.calls > 0)
      .sort((a, b) => b.ms - a.ms);
    const total = moved.reduce((sum, row) => ({ calls: sum.calls + row.calls, ms: sum.ms + row.ms, walBytes: sum.walBytes + row.walBytes }), { calls: 0, ms: 0, walBytes: 0 });
    lines.push(`  statements: ${per(total.calls)} calls, ${(total.ms / Math.max(units, 1)).toFixed(3)} ms executing, WAL ${per(total.walBytes)} bytes`);
    for (const row of moved.slice(0, 30))
      lines.push(
        `    ${per(row.calls)} calls, ${per(row.rows)} rows, ${((row.ms * 1000) / Math.max(units, 1)).toFixed(0)} us, WAL ${per(row.walBytes)} B: ${row.query.slice(0, 160)}`,
      );
    return lines;
  }
}

// `--citus`: what each answer cost the cluster, in counts that do not depend on the machine,
// taken as deltas around a scenario and divided by its answers.
//
// - Statements the coordinator planned and executed over distributed or reference tables, by
//   how many shards they reached: Citus's own counters (`citus_stat_counters`, switched on for
//   the bench's database with `citus.enable_stat_counters`).
// - Round trips from the coordinator to the workers, the transaction blocks it opened there, and
//   its two-phase commits: every message a worker receives from the bench's database, from the
//   worker's statement log (`log_statement = 'all'` for that database on the workers only). A
//   simple query (`BEGIN ...; SELECT assign_distributed_transaction_id(...)`, `COMMIT`,
//   `PREPARE TRANSACTION`, `COMMIT PREPARED`) and a task sent with its parameters are one round
//   trip each, and the log has one line for each. Citus 13 without `pg_stat_statements` among
//   the preloaded libraries has no cheaper count of them, and loading it needs a restart of
//   every node. The log is read through the worker's own `pg_read_binary_file`, from a session
//   on its `postgres` database, which is not logged.
//
// A worker's log also holds the coordinator's maintenance (the distributed deadlock detector's
// poll every two seconds, the recovery of prepared transactions every minute): those lines are
// left out.
import pg from 'pg';

/** Per answer, over a scenario (warm-up included). */
export interface CitusCounts {
  answers: number;
  /** Statements the coordinator executed that reached one shard (routed, or a reference table read where it is local). */
  singleShardStatements: number;
  /** Statements that reached several shards. */
  multiShardStatements: number;
  /** Messages the workers received: each one round trip from the coordinator. */
  roundTrips: number;
  /** Transaction blocks opened on a worker (BEGIN); a statement sent on its own is a transaction without one. */
  workerTransactionBlocks: number;
  /** Distributed transactions committed with two-phase commit (PREPARE TRANSACTION on two or more workers). */
  twoPhaseCommits: number;
  /** Round trips per worker, in pg_dist_node's order. */
  roundTripsByWorker: number[];
}

interface WorkerLog {
  port: number;
  client: pg.Client;
  size: number;
}

interface Snapshot {
  single: number;
  multi: number;
  logSizes: number[];
}

const MAINTENANCE = /waiting_pid|FROM pg_prepared_xacts/;

export class CitusCounters {
  private constructor(
    private readonly coordinator: pg.Client,
    private readonly workers: WorkerLog[],
    private readonly database: string,
  ) {}

  /**
   * Switches the counters on for `database` (before the service connects: the settings apply
   * to new sessions) and opens a session on the coordinator and one on each worker.
   */
  static async open(coordinatorAdminUrl: string, database: string): Promise<CitusCounters> {
    const adminUrl = (port: number | null, name: string) => {
      const url = new URL(coordinatorAdminUrl);
      if (port !== null) url.port = String(port);
      url.pathname = `/${name}`;
      return url.toString();
    };
    const coordinator = new pg.Client({ connectionString: adminUrl(null, database) });
    await coordinator.connect();
    await coordinator.query(`ALTER DATABASE "${database}" SET citus.enable_stat_counters = on`);
    const nodes = await coordinator.query<{ nodename: string; nodeport: number }>(
      `SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' AND isactive ORDER BY nodeid`,
    );
    const workers: WorkerLog[] = [];
    for (const node of nodes.rows) {
      const url = new URL(adminUrl(node.nodeport, 'postgres'));
      url.hostname = node.nodename;
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      await client.query(`ALTER DATABASE "${database}" SET log_statement = 'all'`);
      workers.push({ port: node.nodeport, client, size: 0 });
    }
    return new CitusCounters(coordinator, workers, database);
  }

  async snapshot(): Promise<Snapshot> {
    const counters = await this.coordinator.query<{ single: string; multi: string }>(
      `SELECT query_execution_single_shard AS single, query_execution_multi_shard AS multi
       FROM citus_stat_counters(0) WHERE database_id = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    const logSizes = await Promise.all(
      this.workers.map(async (worker) => Number((await worker.client.query<{ size: string }>(`SELECT (pg_stat_file('server.log')).size`)).rows[0]!.size)),
    );
    return { single: Number(counters.rows[0]?.single ?? 0), multi: Number(counters.rows[0]?.multi ?? 0), logSizes };
  }

  /** The counts between two snapshots, per answer. */
  async between(before: Snapshot, after: Snapshot, answers: number): Promise<CitusCounts> {
    const per = (count: number) => Number((count / Math.max(answers, 1)).toFixed(3));
    const marker = `@${this.database} LOG:  `;
    let blocks = 0;
    const byWorker: number[] = [];
    const prepared = new Map<string, number>();
    for (const [index, worker] of this.workers.entries()) {
      let roundTrips = 0;
      // A statement a function ran on the worker itself (a delegated call's, on local shards) is
      // logged too, followed by a CONTEXT line of the same backend: not a round trip.
      const lastCounted = new Map<string, boolean>();
      for await (const line of this.lines(worker, before.logSizes[index]!, after.logSizes[index]!)) {
        const pid = /^\S+ \S+ \S+ \[(\d+)\]/.exec(line)?.[1];
        if (pid === undefined) continue;
        if (line.includes(`@${this.database} CONTEXT:  `)) {
          if (lastCounted.get(pid)) roundTrips -= 1;
          lastCounted.set(pid, false);
          continue;
        }
        if (!line.includes(`@${this.database} DETAIL:  `)) lastCounted.set(pid, false);
        const at = line.indexOf(marker);
        if (at < 0) continue;
        const message = line.slice(at + marker.length);
        const text = message.startsWith('statement: ') ? message.slice('statement: '.length) : /^execute [^:]*: /.test(message) ? message.replace(/^execute [^:]*: /, '') : null;
        if (text === null || MAINTENANCE.test(text.slice(0, 300))) continue;
        roundTrips += 1;
        lastCounted.set(pid, true);
        if (text.startsWith('BEGIN')) blocks += 1;
        // 'citus_<group>_<pid>_<transaction>_<connection>': one distributed transaction's participants share all but the last part.
        const gid = /^PREPARE TRANSACTION 'citus_(\d+_\d+_\d+)_\d+'/.exec(text)?.[1];
        if (gid) prepared.set(gid, (prepared.get(gid) ?? 0) + 1);
      }
      byWorker.push(roundTrips);
    }
    return {
      answers,
      singleShardStatements: per(after.single - before.single),
      multiShardStatements: per(after.multi - before.multi),
      roundTrips: per(byWorker.reduce((sum, count) => sum + count, 0)),
      workerTransactionBlocks: per(blocks),
      twoPhaseCommits: per(prepared.size),
      roundTripsByWorker: byWorker.map(per),
    };
  }

  /** The worker's log between two offsets, line by line, read in pieces through SQL. */
  private async *lines(worker: WorkerLog, from: number, to: number): AsyncGenerator<string> {
    const piece = 16 * 1024 * 1024;
    let rest = '';
    for (let offset = from; offset < to; offset += piece) {
      const length = Math.min(piece, to - offset);
      const { rows } = await worker.client.query<{ data: Buffer }>(`SELECT pg_read_binary_file('server.log', $1, $2) AS data`, [offset, length]);
      const text = rest + rows[0]!.data.toString('utf8');
      const lines = text.split('\n');
      rest = lines.pop()!;
      yield* lines;
    }
    if (rest) yield rest;
  }

  async close(): Promise<void> {
    await Promise.all([this.coordinator, ...this.workers.map((worker) => worker.client)].map((client) => client.end().catch(() => {})));
  }
}

/** One line of counts for the printed table. */
export function formatCitusCounts(counts: CitusCounts | undefined): string {
  if (!counts) return '';
  return `${counts.roundTrips} round trips (${counts.roundTripsByWorker.join(' + ')}), ${counts.workerTransactionBlocks} worker transaction blocks, ${counts.twoPhaseCommits} 2PC, ${counts.singleShardStatements} + ${counts.multiShardStatements} statements (one shard + several)`;
}

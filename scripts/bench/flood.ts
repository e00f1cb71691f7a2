import pg from 'pg';
import type { LoadResult, LoadSpec } from './load.js';
import { cpuSecondsOf, RssSampler, runLoad, runLoadMeasuringCpu } from './support.js';

export interface FloodResult {
  /** The flood alone, as fast as it is answered. */
  flood: LoadResult;
  /** xact_commit + xact_rollback of the bench database over the flood alone (see below). */
  transactions: number;
  transactionsPerAnswer: number;
  /** The service's CPU time per flood answer, warm-up included (microseconds). */
  serviceCpuMicrosecondsPerAnswer: number;
  /** The CPU time of the database's own server processes per flood answer; null unless local. */
  databaseCpuMicrosecondsPerAnswer: number | null;
  /** The valid client alone and while the flood runs at `floodRate` answers/s (rounds combined). */
  validAlone: LoadResult;
  validWithFlood: LoadResult;
  floodDuringValid: LoadResult;
  floodRate: number;
  /** Flood answers that were not 401, warm-up included, in both phases. */
  non401: number;
  serverPeakRssBytes: number;
}

// PostgreSQL reports a busy connection's counters when it goes idle, but at most once a second;
// what is left waits up to 10 s (PGSTAT_IDLE_INTERVAL). The counters are read only after
// that long without database work, so every transaction lands on its side of the window
// (unless `waitForCounters` is off: a smoke run, whose figures mean nothing).
const STATS_SETTLE_MS = 11_000;

/**
 * Scenario 8: GET /me with random well-formed keys that belong to no key. Measures how fast
 * they are refused and how many database transactions the refusals cost, then a valid
 * client's GET /me alone and beside a flood at a fixed rate.
 */
export async function runFloodScenario(options: {
  url: string;
  token: string;
  benchUrl: string;
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  floodRate: number;
  serverPid: number;
  waitForCounters: boolean;
  log: (message: string) => void;
}): Promise<FloodResult> {
  const { url, token, connections, warmupSeconds, durationSeconds, floodRate, log } = options;
  const settleMs = options.waitForCounters ? STATS_SETTLE_MS : 0;
  const settle = () => new Promise((resolve) => setTimeout(resolve, settleMs));
  const rss = new RssSampler(() => [options.serverPid]).start();
  const spec = (workload: LoadSpec['workload'], extra: Partial<LoadSpec> = {}): LoadSpec => ({ url, token: null, connections, warmupSeconds, durationSeconds, workload, ...extra });

  log(`8 invalid-key flood: waiting ${settleMs / 1000}s for PostgreSQL's counters, then ${warmupSeconds}s warm-up + ${durationSeconds}s at ${connections} connections`);
  const database = await DatabaseWatch.open(options.benchUrl);
  let flood: LoadResult;
  let transactions: number;
  let serviceCpuMicrosecondsPerAnswer: number | null;
  let databaseCpuSeconds: number | null;
  try {
    await settle();
    const transactionsBefore = await database.transactions();
    const databaseCpuBefore = await database.serverCpuSeconds();
    ({ result: flood, cpuMicrosecondsPerAnswer: serviceCpuMicrosecondsPerAnswer } = await runLoadMeasuringCpu(spec({ kind: 'made-up-keys' }), options.serverPid));
    databaseCpuSeconds = DatabaseWatch.cpuBetween(databaseCpuBefore, await database.serverCpuSeconds());
    await settle();
    transactions = await database.transactionsSince(transactionsBefore);
  } finally {
    await database.close();
  }

  // Alone and beside the flood in alternating rounds of ~5 s, so that a machine whose speed
  // drifts (shared, or busy with something else) biases neither side.
  const rounds = Math.max(1, Math.round(durationSeconds / 5));
  const roundSeconds = durationSeconds / rounds;
  log(`8 invalid-key flood: valid GET /me, ${warmupSeconds}s warm-up, then ${rounds} x (${roundSeconds}s alone + ${roundSeconds}s beside a flood of ${floodRate} answers/s)`);
  const valid = spec({ kind: 'get', path: '/api/v1/me' }, { token, warmupSeconds: 0, durationSeconds: roundSeconds });
  if (warmupSeconds > 0) await runLoad({ ...valid, durationSeconds: warmupSeconds });
  const alone: LoadResult[] = [];
  const beside: LoadResult[] = [];
  const floods: LoadResult[] = [];
  for (let round = 0; round < rounds; round += 1) {
    alone.push(await runLoad(valid));
    // The flood starts first and ends last, so it covers the valid client's whole round.
    const floodRun = runLoad(spec({ kind: 'made-up-keys' }, { warmupSeconds: 0, durationSeconds: roundSeconds + 3, rate: floodRate }));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    beside.push(await runLoad(valid));
    floods.push(await floodRun);
  }
  const validAlone = combined(alone, roundSeconds);
  const validWithFlood = combined(beside, roundSeconds);
  const floodDuringValid = combined(floods, roundSeconds + 3);

  const non401 = [flood, floodDuringValid].reduce((sum, run) => sum + run.answersIncludingWarmup - (run.statusCounts['401'] ?? 0), 0);
  return {
    flood,
    transactions,
    transactionsPerAnswer: transactions / Math.max(flood.answersIncludingWarmup, 1),
    serviceCpuMicrosecondsPerAnswer: serviceCpuMicrosecondsPerAnswer ?? 0,
    databaseCpuMicrosecondsPerAnswer: databaseCpuSeconds === null ? null : (databaseCpuSeconds * 1e6) / Math.max(flood.answersIncludingWarmup, 1),
    validAlone,
    validWithFlood,
    floodDuringValid,
    floodRate,
    non401,
    serverPeakRssBytes: rss.stop(),
  };
}

/** Rounds of one load as one: req/s over all of them, the median p50 and the highest p99. */
function combined(runs: LoadResult[], secondsEach: number): LoadResult {
  const total = (pick: (run: LoadResult) => number) => runs.reduce((sum, run) => sum + pick(run), 0);
  const statusCounts: Record<string, number> = {};
  for (const run of runs) for (const [status, count] of Object.entries(run.statusCounts)) statusCounts[status] = (statusCounts[status] ?? 0) + count;
  const p50s = runs.map((run) => run.p50).sort((a, b) => a - b);
  return {
    requestsPerSecond: total((run) => run.requests) / (secondsEach * runs.length),
    p50: p50s[Math.floor(p50s.length / 2)]!,
    p99: Math.max(...runs.map((run) => run.p99)),
    requests: total((run) => run.requests),
    non2xx: total((run) => run.non2xx),
    errors: total((run) => run.errors),
    timeouts: total((run) => run.timeouts),
    statusCounts,
    answersIncludingWarmup: total((run) => run.answersIncludingWarmup),
  };
}

type CpuByProcess = Map<number, number>;

/**
 * Reads the bench database's counters over one connection of its own, and knows which of the
 * counted transactions are its own (one per statement it sent).
 */
class DatabaseWatch {
  private statements = 0;

  private constructor(
    private readonly client: pg.Client,
    private readonly local: boolean,
  ) {}

  static async open(databaseUrl: string): Promise<DatabaseWatch> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return new DatabaseWatch(client, ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(databaseUrl).hostname));
  }

  /** xact_commit + xact_rollback; a mark for transactionsSince(). */
  async transactions(): Promise<{ count: number; statementsSent: number }> {
    // This read is a transaction too, counted after it: it belongs to the window it opens.
    const statementsSent = this.statements;
    const { rows } = await this.query<{ transactions: string }>('SELECT xact_commit + xact_rollback AS transactions FROM pg_stat_database WHERE datname = current_database()');
    return { count: Number(rows[0]!.transactions), statementsSent };
  }

  /** Transactions since the mark, less the ones this watch sent from the mark on. */
  async transactionsSince(mark: { count: number; statementsSent: number }): Promise<number> {
    const sentSinceMark = this.statements - mark.statementsSent;
    return (await this.transactions()).count - mark.count - sentSinceMark;
  }

  /**
   * CPU seconds of each server process connected to the database now, from /proc: only when
   * PostgreSQL runs on this machine (null otherwise).
   */
  async serverCpuSeconds(): Promise<CpuByProcess | null> {
    if (!this.local) return null;
    const { rows } = await this.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    const byProcess: CpuByProcess = new Map();
    for (const { pid } of rows) {
      const seconds = cpuSecondsOf(pid);
      if (seconds === null) return null;
      byProcess.set(pid, seconds);
    }
    return byProcess;
  }

  /** CPU the processes present at `after` used since `before` (one closed in between is missed). */
  static cpuBetween(before: CpuByProcess | null, after: CpuByProcess | null): number | null {
    if (!before || !after) return null;
    return [...after].reduce((sum, [pid, seconds]) => sum + seconds - (before.get(pid) ?? 0), 0);
  }

  close(): Promise<void> {
    return this.client.end();
  }

  private query<T extends pg.QueryResultRow>(text: string) {
    this.statements += 1;
    return this.client.query<T>(text);
  }
}

// The load generator, run as its own process so it never shares the server's event loop.
// Reads a LoadSpec as JSON from argv[2], runs the warm-up and then the measured run with
// autocannon, and prints one LoadResult as JSON on stdout.
import autocannon from 'autocannon';
import { nextRequest, type Workload } from './workloads.js';

export type { Workload } from './workloads.js';

export interface LoadSpec {
  url: string;
  token: string | null;
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  workload: Workload;
  /** Requests per second over all connections (autocannon's overallRate); unset: as fast as answered. */
  rate?: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Answers by status code, warm-up included. */
  statusCounts: Record<string, number>;
  /** Answers, warm-up included. */
  answersIncludingWarmup: number;
}

function requestsFor(spec: LoadSpec): autocannon.Request[] {
  const first = nextRequest(spec.workload);
  // A constant request is sent as it is; anything else is made anew for every request.
  if (first.constant) return [{ method: first.method, path: first.path }];
  return [
    {
      method: first.method,
      path: first.path,
      setupRequest: (request) => {
        const next = nextRequest(spec.workload);
        // Method and body too: a mixed workload sends GETs and POSTs over the same connections.
        return { ...request, method: next.method, path: next.path, body: next.body, headers: { ...request.headers, ...next.headers } };
      },
    },
  ];
}

function run(spec: LoadSpec, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (spec.token) headers.authorization = `Bearer ${spec.token}`;
    autocannon(
      {
        url: spec.url,
        connections: spec.connections,
        duration: seconds,
        headers,
        requests: requestsFor(spec),
        timeout: 30,
        ...(spec.rate ? { overallRate: spec.rate } : {}),
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
  const warmup = spec.warmupSeconds > 0 ? await run(spec, spec.warmupSeconds) : null;
  const result = await run(spec, spec.durationSeconds);
  const statusCounts: Record<string, number> = {};
  for (const run of [warmup, result]) {
    for (const [status, { count }] of Object.entries(run?.statusCodeStats ?? {})) statusCounts[status] = (statusCounts[status] ?? 0) + (count ?? 0);
  }
  const output: LoadResult = {
    requestsPerSecond: result.requests.total / (result.duration || spec.durationSeconds),
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCounts,
    answersIncludingWarmup: Object.values(statusCounts).reduce((sum, count) => sum + count, 0),
  };
  process.stdout.write(`${JSON.stringify(output)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`load generator failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

// The fixed-rate load generator (open model): requests leave at fixed intervals whether or
// not earlier ones were answered, so a slow answer cannot slow the rate down, and each
// latency is measured from the moment its request was due, not from when it was sent (a
// generator running late counts against the answer, never hides it). autocannon's
// overallRate paces its connections instead: a connection waits for its answer before it
// sends again, which is a closed model and hides queueing.
// Run as its own process: `tsx scripts/bench/open-loop.ts <json OpenLoopSpec>`; prints one
// OpenLoopResult as JSON on stdout.
import http from 'node:http';
import { nextRequest, type Workload } from './workloads.js';

export interface OpenLoopSpec {
  url: string;
  token: string | null;
  /** Requests per second. */
  rate: number;
  warmupSeconds: number;
  durationSeconds: number;
  workload: Workload;
}

export interface OpenLoopResult {
  rate: number;
  /** Requests due in the measured window (all of them answered or failed). */
  requests: number;
  answeredPerSecond: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  non2xx: number;
  errors: number;
  /** Why requests failed (the error's code, else its message), with how many each. */
  errorReasons: Record<string, number>;
  /** How late the generator sent its requests at worst (ms): large values mean it could not keep up. */
  maxSendLagMs: number;
}

// Enough sockets that a request never waits for a free one at the rates these scenarios
// send, so the latency measured is the service's; each idle socket is kept open for the
// next request.
const MAX_SOCKETS = 512;
const REQUEST_TIMEOUT_MS = 30_000;

function send(agent: http.Agent, base: URL, token: string | null, workload: Workload): Promise<number> {
  const request = nextRequest(workload);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...request.headers };
  if (token && !headers.authorization) headers.authorization = `Bearer ${token}`;
  if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
  return new Promise((resolve, reject) => {
    const outgoing = http.request({ agent, host: base.hostname, port: base.port, method: request.method, path: request.path, headers, timeout: REQUEST_TIMEOUT_MS }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
      response.once('error', reject);
    });
    outgoing.once('timeout', () => outgoing.destroy(new Error('timeout')));
    outgoing.once('error', reject);
    outgoing.end(request.body);
  });
}

/** Sends `rate` requests per second for `seconds`; latencies (ms) of the answered ones. */
async function runFor(spec: OpenLoopSpec, agent: http.Agent, seconds: number) {
  const base = new URL(spec.url);
  const total = Math.round(spec.rate * seconds);
  const interval = 1000 / spec.rate;
  const latencies = new Float64Array(total);
  let answered = 0;
  let non2xx = 0;
  let errors = 0;
  const errorReasons: Record<string, number> = {};
  let maxSendLagMs = 0;
  const pending: Array<Promise<void>> = [];
  const started = performance.now();
  let sent = 0;
  while (sent < total) {
    const now = performance.now();
    // Everything due by now leaves now, however late the timer fired.
    while (sent < total && started + sent * interval <= now) {
      const due = started + sent * interval;
      maxSendLagMs = Math.max(maxSendLagMs, now - due);
      pending.push(
        send(agent, base, spec.token, spec.workload).then(
          (status) => {
            latencies[answered++] = performance.now() - due;
            if (status < 200 || status > 299) non2xx += 1;
          },
          (error: NodeJS.ErrnoException) => {
            errors += 1;
            const reason = error.code ?? error.message;
            errorReasons[reason] = (errorReasons[reason] ?? 0) + 1;
          },
        ),
      );
      sent += 1;
    }
    const next = started + sent * interval;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now() - 1)));
  }
  await Promise.all(pending);
  const sorted = latencies.subarray(0, answered).sort();
  const quantile = (q: number) => (answered === 0 ? 0 : Number(sorted[Math.min(answered - 1, Math.ceil(q * answered) - 1)]!.toFixed(2)));
  const lastAnswer = performance.now();
  return {
    rate: spec.rate,
    requests: total,
    answeredPerSecond: answered / ((lastAnswer - started) / 1000),
    p50: quantile(0.5),
    p99: quantile(0.99),
    p999: quantile(0.999),
    max: answered === 0 ? 0 : Number(sorted[answered - 1]!.toFixed(2)),
    non2xx,
    errors,
    errorReasons,
    maxSendLagMs: Number(maxSendLagMs.toFixed(2)),
  } satisfies OpenLoopResult;
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as OpenLoopSpec;
  if (!(spec.rate > 0)) throw new Error(`rate must be positive, got ${spec.rate}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  if (spec.warmupSeconds > 0) await runFor(spec, agent, spec.warmupSeconds);
  const result = await runFor(spec, agent, spec.durationSeconds);
  agent.destroy();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`open-loop generator failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

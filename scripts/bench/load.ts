// The load generator, run as its own process so it never shares the server's event loop.
// Reads a LoadSpec as JSON from argv[2], runs the warm-up and then the measured run with
// autocannon, and prints one LoadResult as JSON on stdout.
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { seededPerson } from './seed.js';

export type Workload =
  | { kind: 'get'; path: string }
  | { kind: 'get-random-lead'; ids: { from: number; to: number } }
  | { kind: 'new-lead'; runId: string; phoneBase: number }
  | { kind: 'existing-lead'; seeded: number }
  | { kind: 'new-batch'; runId: string; phoneBase: number; size: number }
  | { kind: 'baseline-insert' }
  /** GET /me, each request with a new random well-formed key (`lk` + 10 base36 `_` 43 base64url). */
  | { kind: 'made-up-keys' };

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

let counter = 0;
// Per load process, so separate runs with the same runId never send the same person twice.
const salt = Math.random().toString(36).slice(2, 7);
const phoneOffset = Math.floor(Math.random() * 100) * 1_000_000;
const randomInt = (from: number, to: number) => from + Math.floor(Math.random() * (to - from + 1));

/**
 * A new person: company from a business domain, two tags, a phone and a LinkedIn URL. Every
 * key is unique per run (phones from a range per scenario), so nothing matches an earlier lead.
 */
function newPerson(runId: string, phoneBase: number) {
  const n = ++counter;
  return {
    name: `Bench Person ${runId}-${n}`,
    email: `p${runId}${salt}-${n}@firm${n % 500}.example`,
    phone: `+1 ${phoneBase + phoneOffset + n}`,
    linkedin_url: `https://www.linkedin.com/in/bench-${runId}${salt}-${n}`,
    job_title: 'Buyer',
    tags: ['bench', `wave-${n % 10}`],
  };
}

/** One of the people seeded by SQL (see seed.ts): the same keys, so it matches and updates. */
function existingPerson(seeded: number) {
  return { ...seededPerson(randomInt(1, seeded)), job_title: 'Updated' };
}

function requestsFor(spec: LoadSpec): autocannon.Request[] {
  const workload = spec.workload;
  const json = (body: () => unknown): autocannon.Request => ({
    method: 'POST',
    path: workload.kind === 'new-batch' ? '/api/v1/leads/batch' : workload.kind === 'baseline-insert' ? '/insert' : '/api/v1/leads',
    setupRequest: (request) => ({ ...request, body: JSON.stringify(body()) }),
  });
  switch (workload.kind) {
    case 'get':
      return [{ method: 'GET', path: workload.path }];
    case 'get-random-lead':
      return [{ method: 'GET', setupRequest: (request) => ({ ...request, path: `/api/v1/leads/${randomInt(workload.ids.from, workload.ids.to)}` }) }];
    case 'new-lead':
      return [json(() => newPerson(workload.runId, workload.phoneBase))];
    case 'existing-lead':
      return [json(() => existingPerson(workload.seeded))];
    case 'new-batch':
      return [json(() => ({ leads: Array.from({ length: workload.size }, () => newPerson(workload.runId, workload.phoneBase)) }))];
    case 'baseline-insert':
      return [json(() => newPerson('baseline', 0))];
    case 'made-up-keys':
      return [{ method: 'GET', path: '/api/v1/me', setupRequest: (request) => ({ ...request, headers: { ...request.headers, authorization: `Bearer ${madeUpKey()}` } }) }];
  }
}

function madeUpKey(): string {
  const prefix = Array.from(randomBytes(10), (byte) => (byte % 36).toString(36)).join('');
  return `lk${prefix}_${randomBytes(32).toString('base64url')}`;
}

function run(spec: LoadSpec, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (spec.token) headers.authorization = `Bearer ${spec.token}`;
    autocannon({
      url: spec.url,
      connections: spec.connections,
      duration: seconds,
      headers,
      requests: requestsFor(spec),
      timeout: 30,
      ...(spec.rate ? { overallRate: spec.rate } : {}),
    }, (error, result) => (error ? reject(error) : resolve(result)));
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

// What each scenario sends: one request at a time, the same for the closed-loop load
// generator (load.ts, autocannon) and the fixed-rate one (open-loop.ts).
import { randomBytes } from 'node:crypto';
import { seededPerson } from './seed.js';

export type Workload =
  | { kind: 'get'; path: string }
  /** `inOrder`: the ids one after another instead of at random (repeatable counts, instructions.ts). */
  | { kind: 'get-random-lead'; ids: { from: number; to: number }; inOrder?: boolean }
  /** `tokens`: each request sent with the next of these API keys in turn (one per workspace), instead of the run's one key. */
  | { kind: 'new-lead'; runId: string; phoneBase: number; tokens?: readonly string[] }
  /** `inOrder`: seeded people 1, 2, ... (each request a person's first update) instead of at random. */
  | { kind: 'existing-lead'; seeded: number; tokens?: readonly string[]; inOrder?: boolean }
  | { kind: 'new-batch'; runId: string; phoneBase: number; size: number }
  | { kind: 'baseline-insert' }
  /** GET /me, each request with a new random well-formed key (`lk` + 10 base36 `_` 43 base64url). */
  | { kind: 'made-up-keys' }
  /** The console's lead list (newest first), or a random lead's page, with a session cookie. */
  | { kind: 'console-lead-list'; cookie: string }
  | { kind: 'console-lead-page'; cookie: string; ids: { from: number; to: number } }
  /** The console's lead list with a search, the next of `terms` per request (bench/search.ts). */
  | { kind: 'console-lead-search'; cookie: string; terms: readonly string[] }
  /** Each request drawn from one of the parts at random, by weight (the mixed scenarios). */
  | { kind: 'mixed'; parts: ReadonlyArray<{ weight: number; workload: Workload }> };

export interface BenchRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /** The same request every time (a plain GET). */
  constant?: boolean;
}

let counter = 0;
let turn = 0;
// Per load process, so separate runs with the same runId never send the same person twice.
const salt = Math.random().toString(36).slice(2, 7);
const phoneOffset = Math.floor(Math.random() * 100) * 1_000_000;
const randomInt = (from: number, to: number) => from + Math.floor(Math.random() * (to - from + 1));
const cursors = new WeakMap<Workload, number>();
/** The workload's next number in from..to: in turn (wrapping) when it asks for order, else at random. */
function pick(workload: Workload & { inOrder?: boolean }, from: number, to: number): number {
  if (!workload.inOrder) return randomInt(from, to);
  const taken = cursors.get(workload) ?? 0;
  cursors.set(workload, taken + 1);
  return from + (taken % (to - from + 1));
}

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
function existingPerson(n: number) {
  return { ...seededPerson(n), job_title: 'Updated' };
}

function madeUpKey(): string {
  const prefix = Array.from(randomBytes(10), (byte) => (byte % 36).toString(36)).join('');
  return `lk${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** The next key in turn, as the request's own Authorization (it overrides the run's one key). */
function spread(request: BenchRequest, tokens: readonly string[] | undefined): BenchRequest {
  if (!tokens || tokens.length === 0) return request;
  return { ...request, headers: { ...request.headers, authorization: `Bearer ${tokens[turn++ % tokens.length]}` } };
}

/** The next request of a workload (the baselines serve the service's paths). */
export function nextRequest(workload: Workload): BenchRequest {
  const post = (path: string, body: unknown): BenchRequest => ({ method: 'POST', path, body: JSON.stringify(body) });
  switch (workload.kind) {
    case 'get':
      return { method: 'GET', path: workload.path, constant: true };
    case 'get-random-lead':
      return { method: 'GET', path: `/api/v1/leads/${pick(workload, workload.ids.from, workload.ids.to)}` };
    case 'new-lead':
      return spread(post('/api/v1/leads', newPerson(workload.runId, workload.phoneBase)), workload.tokens);
    case 'existing-lead':
      return spread(post('/api/v1/leads', existingPerson(pick(workload, 1, workload.seeded))), workload.tokens);
    case 'new-batch':
      return post('/api/v1/leads/batch', { leads: Array.from({ length: workload.size }, () => newPerson(workload.runId, workload.phoneBase)) });
    case 'baseline-insert':
      return post('/insert', newPerson('baseline', 0));
    case 'made-up-keys':
      return { method: 'GET', path: '/api/v1/me', headers: { authorization: `Bearer ${madeUpKey()}` } };
    case 'console-lead-list':
      return { method: 'GET', path: '/console/leads', headers: { cookie: workload.cookie } };
    case 'console-lead-page':
      return { method: 'GET', path: `/console/leads/${randomInt(workload.ids.from, workload.ids.to)}`, headers: { cookie: workload.cookie } };
    case 'console-lead-search':
      return { method: 'GET', path: `/console/leads?${new URLSearchParams({ search: workload.terms[turn++ % workload.terms.length]! })}`, headers: { cookie: workload.cookie } };
    case 'mixed': {
      const { constant: _, ...request } = nextRequest(pickPart(workload.parts));
      return request;
    }
  }
}

/** One of the parts at random, by weight. */
function pickPart(parts: ReadonlyArray<{ weight: number; workload: Workload }>): Workload {
  const total = parts.reduce((sum, part) => sum + part.weight, 0);
  let draw = Math.random() * total;
  for (const part of parts) {
    draw -= part.weight;
    if (draw < 0) return part.workload;
  }
  return parts[parts.length - 1]!.workload;
}

// The client's HTTP layer under openapi-fetch: one call is one Request, attempted up to
// `maxAttempts` times. The same Request (so the same Idempotency-Key) is cloned for every
// attempt; each answer is read completely inside the attempt, so a connection that drops
// while the body streams is retried like one that never answered.

export type FetchImplementation = (input: Request) => Promise<Response>;

export interface RetryPolicy {
  /** Total attempts per call, the first one included. */
  maxAttempts: number;
  /** Backoff before retry n is a random delay in [0, min(cap, base * 2^(n-1))] ("full jitter"). */
  backoffBaseMs: number;
  backoffCapMs: number;
  /** Per attempt, answer body included. */
  timeoutMs: number;
}

export interface TransportDependencies {
  fetch: FetchImplementation;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
  random: () => number;
}

/** Every attempt failed without an answer; `cause` is what the last one threw. */
export class NetworkFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly attempts: number,
  ) {
    super(`no answer after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${describe(cause)}`);
    this.name = 'NetworkFailure';
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `${error.message}${cause}`;
}

/** Only the rate limit and server-side failures are retried; other 4xx never are. */
export const isRetryableStatus = (status: number) => status === 429 || status >= 500;

/** `Retry-After` as seconds or an HTTP date, in milliseconds from `now`; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number): number {
  const ceiling = Math.min(policy.backoffCapMs, policy.backoffBaseMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

/**
 * Pauses the next request while the key's budget is spent: the IETF `RateLimit` header the
 * service sends on every answer says how many requests remain (`r`) and when the window
 * resets (`t` seconds), so the client waits instead of collecting a 429.
 */
class RateLimitGate {
  private pausedUntil = 0;
  constructor(private readonly deps: TransportDependencies) {}

  observe(headers: Headers): void {
    const header = headers.get('ratelimit');
    const remaining = header?.match(/(?:^|[;,\s])r=(\d+)/)?.[1];
    const resetSeconds = header?.match(/(?:^|[;,\s])t=(\d+)/)?.[1];
    if (remaining === '0' && resetSeconds !== undefined) this.pausedUntil = this.deps.now() + Number(resetSeconds) * 1000;
  }

  /** An explicit wait (`Retry-After`) was just served: it supersedes the header's estimate. */
  clear(): void {
    this.pausedUntil = 0;
  }

  async waitTurn(): Promise<void> {
    const wait = this.pausedUntil - this.deps.now();
    if (wait <= 0) return;
    this.pausedUntil = 0;
    await this.deps.sleep(wait);
  }
}

export interface RetryingFetch {
  fetch: (request: Request) => Promise<Response>;
  /** How many attempts produced this response. */
  attemptsOf(response: Response): number;
}

export function createRetryingFetch(policy: RetryPolicy, deps: TransportDependencies): RetryingFetch {
  const gate = new RateLimitGate(deps);
  const attempts = new WeakMap<Response, number>();

  async function attemptOnce(request: Request): Promise<Response> {
    const answer = await deps.fetch(new Request(request.clone(), { signal: AbortSignal.timeout(policy.timeoutMs) }));
    const body = await answer.arrayBuffer();
    return new Response(body.byteLength === 0 ? null : body, { status: answer.status, statusText: answer.statusText, headers: answer.headers });
  }

  async function fetchWithRetries(request: Request): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      await gate.waitTurn();
      let response: Response;
      try {
        response = await attemptOnce(request);
      } catch (error) {
        if (attempt >= policy.maxAttempts) throw new NetworkFailure(error, attempt);
        await deps.sleep(backoffMs(policy, attempt, deps.random));
        continue;
      }
      gate.observe(response.headers);
      if (!isRetryableStatus(response.status) || attempt >= policy.maxAttempts) {
        attempts.set(response, attempt);
        return response;
      }
      // A 429 or 503 says how long to wait; other failures back off.
      const told = response.status === 429 || response.status === 503 ? retryAfterMs(response.headers.get('retry-after'), deps.now()) : null;
      await deps.sleep(told ?? backoffMs(policy, attempt, deps.random));
      if (told !== null) gate.clear();
    }
  }

  return { fetch: fetchWithRetries, attemptsOf: (response) => attempts.get(response) ?? 1 };
}

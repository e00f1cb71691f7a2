import type { RequestHandler } from 'express';
import { ApiError, BUSY_RETRY_AFTER_SECONDS } from '../errors.js';
import { authOf } from './auth.js';

// Per API key, beside the rate limit: how many of the key's requests this process works on at
// once. The rate limit bounds how many requests a key sends in a minute; this bounds what they
// hold meanwhile (connections, places in the write queue), so one key's slow or piled-up
// requests cannot take what other keys' requests need. Runs after the rate limit, whose
// RateLimit headers the 429 carries like every other answer.

export interface ConcurrencyLimit {
  handler: RequestHandler;
  /** Requests holding a slot in this process now, every key's together. */
  inProgress(): number;
}

export function perKeyConcurrencyLimit(limit: number, onLimited: () => void): ConcurrencyLimit {
  const inFlight = new Map<number, number>();
  let inProgress = 0;
  const refusal = new ApiError(
    429,
    {
      error: 'rate_limited',
      message: `Too many requests at once: this API key may have ${limit} requests in progress on a server at a time. Retry after the number of seconds in the Retry-After header, or send fewer requests in parallel.`,
    },
    { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) },
  );

  const handler: RequestHandler = (req, res, next) => {
    const key = authOf(req).apiKeyId;
    const count = inFlight.get(key) ?? 0;
    if (count >= limit) {
      onLimited();
      throw refusal;
    }
    inFlight.set(key, count + 1);
    inProgress += 1;
    // A response emits 'close' once: after 'finish', or alone when the client goes away. One
    // that has closed never emits it again: inOrder stops a request whose client has gone
    // before this step, so here it has not closed yet.
    res.on('close', () => {
      inProgress -= 1;
      const left = inFlight.get(key)! - 1;
      if (left === 0) inFlight.delete(key);
      else inFlight.set(key, left);
    });
    next();
  };
  return { handler, inProgress: () => inProgress };
}

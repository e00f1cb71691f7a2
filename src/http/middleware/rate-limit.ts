import { rateLimit, type RateLimitRequestHandler, type Store } from 'express-rate-limit';
import type { RateLimitError } from '../../../generated/api.js';
import { authOf } from './auth.js';

const WINDOW_MS = 60_000;

// Per API key, never per address: runs after authentication and keys on the key's public prefix.
export function perKeyRateLimit(store: Store, limitPerMinute: number, onLimited: () => void): RateLimitRequestHandler {
  return rateLimit({
    windowMs: WINDOW_MS,
    limit: limitPerMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    identifier: `${limitPerMinute}-per-minute`,
    keyGenerator: (req) => authOf(req).prefix,
    store,
    passOnStoreError: true,
    // Limits are per key, never per address: TRUST_PROXY=true takes nothing from them.
    validate: { keyGeneratorIpFallback: false, trustProxy: false },
    handler: (_req, res, _next, options) => {
      onLimited();
      res.status(options.statusCode).json({
        error: 'rate_limited',
        message: `Too many requests: this API key may make ${limitPerMinute} requests per minute. Retry after the number of seconds in the Retry-After header.`,
      } satisfies RateLimitError);
    },
  });
}

import type { Request, Response } from 'express';
import type { WriteResult } from '../../leads/intake/write-request.js';
import type { Idempotency } from '../../leads/intake/intake-service.js';

/** The Idempotency-Key of a POST (its length was checked against the document by the request validator) and the body it covers. */
export function idempotencyOf(req: Request): Idempotency {
  return { key: req.get('idempotency-key'), bodyAsSent: req.bodyAsSent };
}

export function sendWriteResult<Body>(res: Response<Body>, result: WriteResult<Body>): void {
  if (result.replayed) res.set('Idempotency-Replayed', 'true');
  res.status(result.status).json(result.body);
}

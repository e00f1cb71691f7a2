import type { Response } from 'express';
import type { WriteResult } from '../idempotency/run-idempotent.js';

export function sendWriteResult(res: Response, result: WriteResult<unknown>): void {
  if (result.replayed) res.set('Idempotency-Replayed', 'true');
  res.status(result.status).json(result.body);
}

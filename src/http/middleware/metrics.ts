import { performance } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
import type { HttpMetrics } from '../../metrics/metrics.js';
import type { OperationId } from '../operations.js';

/**
 * Times each request of an operation until its answer is sent, labelled by the operationId
 * (never the raw path: the number of series stays that of the document's operations).
 * It runs once the route matched, so 404 and 405 answers are not timed.
 */
export function timeOperation(metrics: HttpMetrics, operationId: OperationId): RequestHandler {
  const finished = metrics.operation(operationId);
  return (_req, res, next) => {
    const started = performance.now();
    // 'finish' comes at most once: `on` spares the wrapper `once` makes per request.
    res.on('finish', () => finished(res.statusCode, (performance.now() - started) / 1000));
    next();
  };
}

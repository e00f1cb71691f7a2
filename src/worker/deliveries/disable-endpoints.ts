import type { FailingEndpoint } from '../../deliveries/attempt-repository.js';
import { disabledReason, healthPolicy } from '../../deliveries/endpoint-health.js';
import { disableEndpoint } from '../../endpoints/repository.js';
import type { WorkerDeps } from '../worker-deps.js';

/**
 * Disables the endpoints whose failures just met the rule, one statement each (rare, and one
 * row lock at a time). The worker whose statement disabled one logs it and counts it; every
 * other worker finds it disabled already, so each disabling is logged and counted once. On a
 * database error it logs and leaves them: the next failure recorded tries again.
 */
export async function disableFailingEndpoints(deps: WorkerDeps, failing: readonly FailingEndpoint[]): Promise<void> {
  const policy = healthPolicy(deps.config);
  for (const endpoint of failing) {
    try {
      const disabled = await disableEndpoint(deps.db, endpoint, disabledReason(endpoint), policy);
      if (!disabled) continue;
      deps.metrics.worker.endpointDisabled(disabled.kind);
      deps.logger.warn(
        { endpoint: { kind: disabled.kind, id: disabled.id }, disabledAt: disabled.disabled_at, reason: disabled.disabled_reason },
        `${disabled.kind} ${disabled.id} disabled: ${disabled.disabled_reason}; its new deliveries are recorded Failed until \`${disabled.kind} enable --id ${disabled.id}\``,
      );
    } catch (error) {
      deps.logger.error({ err: error, endpoint: { kind: endpoint.kind, id: endpoint.id } }, 'could not disable a failing endpoint; the next failure recorded tries again');
    }
  }
}

import type { Executor } from '../db/connect.js';
import { enableEndpoint, type EndpointRef } from './repository.js';

// What `connector enable` / `workflow enable` do once they know the endpoint exists (deleting
// one: deleteEndpoint in src/deliveries/service.ts, as it finishes the endpoint's deliveries).

/**
 * Turns the endpoint back on (see enableEndpoint) and says what it was: enabling one that
 * is not disabled changes nothing but its failure count.
 */
export async function enable(db: Executor, endpoint: EndpointRef) {
  const before = await enableEndpoint(db, endpoint);
  return { id: endpoint.id, enabled: true, was_disabled_at: before.disabled_at, was_disabled_reason: before.disabled_reason };
}

import type { Db } from '../db/connect.js';
import { dueDeliveriesBySender } from '../deliveries/repository.js';
import type { Backlog } from '../metrics/metrics.js';
import { pendingEventsByTopic } from '../outbox/repository.js';

/** What the worker has still to do, for the metrics: two index reads, one after the other (one connection). */
export async function readBacklog(db: Db): Promise<Backlog> {
  const outbox = await pendingEventsByTopic(db);
  return { outbox, deliveries: await dueDeliveriesBySender(db) };
}

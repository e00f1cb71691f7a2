import type { Db } from '../db/connect.js';
import { purgeExpiredRecords } from '../idempotency/repository.js';
import { purgeProcessed } from '../outbox/repository.js';

/** Deletes what has outlived its purpose: idempotency answers past 24 h, old processed events. */
export async function housekeeping(db: Db): Promise<void> {
  await purgeExpiredRecords(db);
  await purgeProcessed(db);
}

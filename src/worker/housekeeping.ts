import { purgeOldAuditEntries } from '../audit/repository.js';
import { purgeSignIns, sessionLimitsOf, type SessionLimits } from '../console-auth/service.js';
import type { Db } from '../db/connect.js';
import { purgeOldDeliveries } from '../deliveries/repository.js';
import { purgeExpiredRecords } from '../idempotency/repository.js';
import { purgeOldDailyCounts } from '../leads/daily-counts-repository.js';
import { purgeProcessed } from '../outbox/repository.js';
import type { PeriodicTask } from './scheduler.js';
import type { JobDeps } from './worker-deps.js';

const HOUSEKEEPING_EVERY_MS = 10 * 60 * 1000;

/** Deletes what has outlived its purpose: at start, then every ten minutes. */
export function housekeepingTask(deps: JobDeps): PeriodicTask {
  return {
    name: 'housekeeping',
    intervalMs: HOUSEKEEPING_EVERY_MS,
    async step() {
      await housekeeping(deps.db, deps.config.DELIVERY_RETENTION_DAYS, sessionLimitsOf(deps.config), deps.config.AUDIT_RETENTION_DAYS);
      // A run deletes everything due, batch after batch: nothing is left for an immediate next step.
      return 0;
    },
  };
}

/**
 * Deletes what has outlived its purpose: idempotency answers past 24 h, old processed events,
 * finished deliveries (and their attempts) past DELIVERY_RETENTION_DAYS, the console's ended
 * sessions, used or expired sign-in links, sign-in failures past the throttle's window, and
 * the overview's daily intake counts past 90 days, and audit entries past AUDIT_RETENTION_DAYS.
 */
export async function housekeeping(db: Db, deliveryRetentionDays: number, sessionLimits: SessionLimits, auditRetentionDays: number): Promise<void> {
  await purgeExpiredRecords(db);
  await purgeProcessed(db);
  await purgeOldDeliveries(db, deliveryRetentionDays);
  await purgeSignIns(db, sessionLimits);
  await purgeOldDailyCounts(db);
  await purgeOldAuditEntries(db, auditRetentionDays);
}

import { analyzeCompanyWebsite, recordWebsiteAnalysis, type WebsiteAnalysis } from '../companies/website.js';
import type { Config } from '../config.js';
import type { Db } from '../db/connect.js';
import { insertDeliveries } from '../deliveries/repository.js';
import { markCompanyLeadsAnalyzed } from '../leads/write-repository.js';
import type { WorkerMetrics } from '../metrics/metrics.js';
import { claimAnalyses, finishClaimed, retryClaimedLater, type StoredEvent } from '../outbox/repository.js';
import { composeAutoPushes } from './auto-push.js';
import { countFailedAtOnce } from './delivery-counts.js';

const MAX_ANALYSIS_TRIES = 5;

type AnalysisEvent = StoredEvent<'company.analyze'>;

/**
 * Finishes one analysis: the company records what its site said, and its leads become
 * analyzed, which auto-pushes them. Only while this worker holds the claim.
 */
async function finishAnalysis(db: Db, workerId: string, event: AnalysisEvent, analysis: WebsiteAnalysis, options: { maxAttempts: number; metrics: WorkerMetrics }): Promise<void> {
  const finished = await db.transaction().execute(async (trx) => {
    if (!(await finishClaimed(trx, event.id, workerId, analysis.ok ? null : analysis.reason))) return null;
    const companyId = event.payload.company_id;
    if (!(await recordWebsiteAnalysis(trx, event.workspace_id, companyId, analysis))) return null;
    const analyzed = await markCompanyLeadsAnalyzed(trx, companyId);
    const autoPushes = await composeAutoPushes(trx, analyzed, () => event.id, options.maxAttempts);
    await insertDeliveries(trx, autoPushes);
    return autoPushes;
  });
  if (!finished) return;
  options.metrics.analysisFinished(analysis.ok ? 'analyzed' : 'failed');
  countFailedAtOnce(options.metrics, finished);
}

/** Claims queued website analyses, runs them concurrently, records each. Returns how many ran. */
export async function runWebsiteAnalyses(
  db: Db, config: Config, workerId: string, options: { limit: number; leaseMs: number; metrics: WorkerMetrics },
): Promise<number> {
  const finishing = { maxAttempts: config.WEBHOOK_MAX_ATTEMPTS, metrics: options.metrics };
  const events = await claimAnalyses(db, workerId, options.limit, options.leaseMs);
  await Promise.all(events.map(async (event) => {
    try {
      const analysis = await analyzeCompanyWebsite(db, config, event.workspace_id, event.payload.company_id);
      await finishAnalysis(db, workerId, event, analysis, finishing);
    } catch (error) {
      // Unexpected (database) trouble: try again later, and give the company up as failed
      // rather than leave it pending forever.
      const reason = error instanceof Error ? error.message : String(error);
      if (event.attempts >= MAX_ANALYSIS_TRIES) {
        await finishAnalysis(db, workerId, event, { ok: false, reason }, finishing).catch(() => {});
      } else {
        await retryClaimedLater(db, event.id, workerId, reason, 2 ** event.attempts * 5).catch(() => {});
      }
    }
  }));
  return events.length;
}

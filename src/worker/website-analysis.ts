import { analyzeCompanyWebsite, recordWebsiteAnalysis, type WebsiteAnalysis } from '../companies/website.js';
import type { Db } from '../db/connect.js';
import { insertDeliveries } from '../deliveries/repository.js';
import { markCompanyLeadsAnalyzed } from '../leads/write-repository.js';
import { claimAnalyses, dueEventWorkspaces, finishClaimed, retryClaimedLater, type StoredEvent } from '../outbox/repository.js';
import { composeAutoPushes } from './auto-push.js';
import { countFailedAtOnce } from './deliveries/counts.js';
import type { PeriodicTask } from './scheduler.js';
import type { JobDeps } from './worker-deps.js';
import { WorkspaceTurns } from './workspace-turns.js';

const ANALYSIS_CONCURRENCY = 4;

/** Queued website analyses, a few at once a step. */
export function websiteAnalysisTask(deps: JobDeps): PeriodicTask {
  const turns = new WorkspaceTurns(dueAnalysisWorkspaces(deps.db));
  return {
    name: 'analysis',
    intervalMs: deps.config.OUTBOX_POLL_MS,
    step: () => runWebsiteAnalyses(deps, turns, ANALYSIS_CONCURRENCY),
  };
}

const MAX_ANALYSIS_TRIES = 5;

type AnalysisEvent = StoredEvent<'company.analyze'>;

/**
 * Finishes one analysis: the company records what its site said, and its leads become
 * analyzed, which auto-pushes them. Only while this worker holds the claim.
 */
async function finishAnalysis(deps: JobDeps, event: AnalysisEvent, analysis: WebsiteAnalysis): Promise<void> {
  const finished = await deps.db.transaction().execute(async (trx) => {
    if (!(await finishClaimed(trx, event, deps.workerId, analysis.ok ? null : analysis.reason))) return null;
    const companyId = event.payload.company_id;
    if (!(await recordWebsiteAnalysis(trx, event.workspace_id, companyId, analysis))) return null;
    const analyzed = await markCompanyLeadsAnalyzed(trx, event.workspace_id, companyId);
    const autoPushes = await composeAutoPushes(trx, analyzed, () => event.id, deps.config.WEBHOOK_MAX_ATTEMPTS);
    await insertDeliveries(trx, autoPushes);
    return autoPushes;
  });
  if (!finished) return;
  deps.metrics.worker.analysisFinished(analysis.ok ? 'analyzed' : 'failed');
  countFailedAtOnce(deps.metrics.worker, finished);
}

/** The workspaces whose website analyses are due, in turn (see WorkspaceTurns). */
const dueAnalysisWorkspaces = (db: Db) => (after: number, limit: number) => dueEventWorkspaces(db, ['company.analyze'], after, limit);

/**
 * Claims up to `limit` queued website analyses, workspace by workspace in turn, runs them
 * concurrently, records each. Returns how many ran.
 */
async function runWebsiteAnalyses(deps: JobDeps, turns: WorkspaceTurns, limit: number): Promise<number> {
  const events: AnalysisEvent[] = [];
  for (const workspaceId of await turns.next()) {
    if (events.length >= limit) break;
    events.push(...(await claimAnalyses(deps.db, workspaceId, deps.workerId, limit - events.length, deps.leaseMs)));
    turns.served(workspaceId);
  }
  await Promise.all(
    events.map(async (event) => {
      try {
        const analysis = await analyzeCompanyWebsite(deps.db, deps.config, event.workspace_id, event.payload.company_id);
        await finishAnalysis(deps, event, analysis);
      } catch (error) {
        // Unexpected (database) trouble: try again later, and give the company up as failed
        // rather than leave it pending forever.
        const reason = error instanceof Error ? error.message : String(error);
        if (event.attempts >= MAX_ANALYSIS_TRIES) {
          await finishAnalysis(deps, event, { ok: false, reason }).catch(() => {});
        } else {
          await retryClaimedLater(deps.db, event, deps.workerId, reason, 2 ** event.attempts * 5).catch(() => {});
        }
      }
    }),
  );
  return events.length;
}

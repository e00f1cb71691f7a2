import type { PeriodicTask } from '../scheduler.js';
import { runWebsiteAnalyses } from '../website-analysis.js';
import type { JobDeps } from '../worker-deps.js';

const ANALYSIS_CONCURRENCY = 4;

/** Queued website analyses, a few at once a step. */
export function websiteAnalysisTask(deps: JobDeps): PeriodicTask {
  return {
    name: 'analysis',
    intervalMs: deps.config.OUTBOX_POLL_MS,
    step: () => runWebsiteAnalyses(deps, ANALYSIS_CONCURRENCY),
  };
}

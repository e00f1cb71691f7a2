import type { PeriodicTask } from '../scheduler.js';
import { dueAnalysisWorkspaces, runWebsiteAnalyses } from '../website-analysis.js';
import type { JobDeps } from '../worker-deps.js';
import { WorkspaceTurns } from '../workspace-turns.js';

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

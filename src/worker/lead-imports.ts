import { dueImportWorkspaces, releaseImportClaims } from '../lead-imports/repository.js';
import { importWriteGroups, runDueImport } from '../lead-imports/service.js';
import type { PeriodicTask } from './scheduler.js';
import type { JobDeps } from './worker-deps.js';
import { WorkspaceTurns } from './workspace-turns.js';

/**
 * CSV imports: claims one due import, workspace by workspace in turn, and runs it chunk by
 * chunk until it ends or the worker stops; a job whose worker stopped is claimed again once
 * its lease runs out, and goes on from its first row not yet done.
 */
export function leadImportsTask(deps: JobDeps): PeriodicTask {
  const turns = new WorkspaceTurns((after: number, limit: number) => dueImportWorkspaces(deps.db, after, limit), 4);
  const groups = importWriteGroups(deps.db, deps.logger);
  return {
    name: 'imports',
    intervalMs: deps.config.OUTBOX_POLL_MS,
    // Its leads' events and their companies' analyses.
    feeds: ['fan-out', 'analysis'],
    async step(pacing) {
      for (const workspaceId of await turns.next()) {
        turns.served(workspaceId);
        const ran = await runDueImport(groups, deps.db, workspaceId, deps.workerId, deps.leaseMs, () => pacing.isStopped);
        if (ran > 0) return ran;
      }
      return 0;
    },
    // A stopping worker lets go of its job between chunks: the next one goes on at once instead of after the lease.
    finish: () =>
      releaseImportClaims(deps.db, deps.workerId).catch((error: unknown) => deps.logger.error({ err: error }, 'could not release import claims; they expire with their lease')),
  };
}

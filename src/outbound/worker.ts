import type { AppContext } from '../context.js';

export interface RunningWorker {
  /** Finishes in-flight work, releases claims, and resolves. */
  stop(): Promise<void>;
}

// Placeholder until the outbound dispatcher lands: drains nothing.
export function startWorker(_ctx: AppContext): RunningWorker {
  return { stop: async () => {} };
}

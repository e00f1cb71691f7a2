/**
 * Whose turn it is. A job claims due work one workspace at a time: each claim names its
 * workspace, so on Citus it runs on that workspace's node and its FOR UPDATE stays on one
 * shard. The workspaces with due work are asked for (`due`: those after `after` first, at most
 * `limit`), and a step serves them in that order, so the next step starts after the last one
 * served and one busy workspace never holds the others back.
 */
export class WorkspaceTurns {
  private last = 0;

  constructor(
    private readonly due: (after: number, limit: number) => Promise<number[]>,
    private readonly perStep = 16,
  ) {}

  /** The workspaces whose turn it is, in order. */
  next(): Promise<number[]> {
    return this.due(this.last, this.perStep);
  }

  /** This workspace was served: the next turn starts after it. */
  served(workspaceId: number): void {
    this.last = workspaceId;
  }
}

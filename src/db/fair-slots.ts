// Slots for work that holds a pooled connection for long (a batch, a dry run), shared fairly
// among callers: at most `total` held at once, so the rest of the pool stays free for other
// work, and at most `perKey` by one caller, so others find one free at once. Callers waiting
// for a slot are served in turn, each caller's own waiters in arrival order.

export class FairSlots<Key> {
  private held = 0;
  private readonly heldBy = new Map<Key, number>();
  /** Waiting callers in their turn's order (a Map keeps insertion order), each with its waiters. */
  private readonly queues = new Map<Key, Array<() => void>>();

  constructor(
    readonly total: number,
    readonly perKey: number,
  ) {}

  /** Slots for a pool of `poolSize` connections: all but `reserved` (kept for other work) for such work, half of those at most for one caller. */
  static forPool<Key>(poolSize: number, reserved: number): FairSlots<Key> {
    const total = Math.max(1, poolSize - reserved);
    return new FairSlots<Key>(total, Math.ceil(total / 2));
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    let count = 0;
    for (const queue of this.queues.values()) count += queue.length;
    return count;
  }

  /** Runs `work` once `key` holds a slot, and frees the slot when it ends. */
  async run<T>(key: Key, work: () => Promise<T>): Promise<T> {
    if (!this.queues.has(key) && this.free(key)) this.take(key);
    else await new Promise<void>((resolve) => this.wait(key, resolve));
    try {
      return await work();
    } finally {
      this.held -= 1;
      const left = this.heldBy.get(key)! - 1;
      if (left === 0) this.heldBy.delete(key);
      else this.heldBy.set(key, left);
      this.grant();
    }
  }

  private wait(key: Key, wake: () => void): void {
    const queue = this.queues.get(key);
    if (queue) queue.push(wake);
    else this.queues.set(key, [wake]);
  }

  private free(key: Key): boolean {
    return this.held < this.total && (this.heldBy.get(key) ?? 0) < this.perKey;
  }

  private take(key: Key): void {
    this.held += 1;
    this.heldBy.set(key, (this.heldBy.get(key) ?? 0) + 1);
  }

  /** Hands free slots to waiting callers in turn; a caller served goes to the back of the turn. */
  private grant(): void {
    for (;;) {
      const next = [...this.queues.keys()].find((key) => this.free(key));
      if (next === undefined) return;
      const queue = this.queues.get(next)!;
      const wake = queue.shift()!;
      this.queues.delete(next);
      if (queue.length > 0) this.queues.set(next, queue);
      this.take(next);
      wake();
    }
  }
}

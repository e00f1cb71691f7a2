import type { Logger } from 'pino';
import type { Db } from '../db/connect.js';
import type { KeyChangeFollower } from './key-cache.js';
import { countKeys, keyCreationIsNotified, listPrefixesAfter } from './repository.js';
import { prefixCode } from './tokens.js';

const PAGE_SIZE = 10_000;
/** 8 bytes a prefix: 16 MB at most. Beyond it the view stays off and the database answers. */
const MAX_PREFIXES = 2_000_000;
/** Keys added after the load wait in a set; this many are merged into the sorted array. */
const MERGE_AT = 1_024;
const RETRY_MS = 1_000;

/**
 * Every existing key prefix, so that a well-formed token whose prefix belongs to no key is
 * refused without a database query: a flood of made-up keys never reaches PostgreSQL.
 *
 * It follows the key cache's LISTEN connection and is trusted only while it cannot miss a
 * key: it loads after LISTEN is active (a key committed before that is in the load, one
 * committed after it is notified) and forgets everything when the connection is lost, until
 * the reload after the reconnect is done. While it is not trusted every prefix "may exist"
 * and authentication reads the database, as it did before the view existed.
 *
 * A notification only ever adds its prefix: a revoked or deleted key stays in the view (a
 * request with it reads the database or the key cache, as before) until the next load.
 * Prefixes are kept as numbers (see prefixCode): a sorted Float64Array from the load, and a
 * small set of keys added since, merged into the array once it holds MERGE_AT of them.
 */
export class PrefixView implements KeyChangeFollower {
  private sorted = new Float64Array(0);
  private readonly added = new Set<number>();
  /** off: not listening (or too many keys); loading: listening, notifications collected. */
  private state: 'off' | 'loading' | 'trusted' = 'off';
  /** Bumped on every loss and every new LISTEN, so a load that began before either is dropped. */
  private generation = 0;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  /** Whether the view currently answers for the database (false: every prefix may exist). */
  get isTrusted(): boolean {
    return this.state === 'trusted';
  }

  /** False only when the view is trusted and no key has this prefix. */
  mayExist(prefix: string): boolean {
    if (this.state !== 'trusted') return true;
    const code = prefixCode(prefix);
    return code !== null && this.contains(code);
  }

  async listening(): Promise<void> {
    this.generation += 1;
    this.state = 'loading';
    await this.load(this.generation);
  }

  // Off, a notification can be dropped: one heard before listening() was called is for a
  // commit that the load, which starts after it, sees anyway.
  changed(prefix: string): void {
    const code = prefixCode(prefix);
    if (this.state === 'off' || code === null || this.contains(code)) return;
    this.added.add(code);
    if (this.state === 'trusted' && this.added.size >= MERGE_AT) this.merge();
  }

  lost(): void {
    this.generation += 1;
    this.state = 'off';
    this.sorted = new Float64Array(0);
    this.added.clear();
  }

  private async load(generation: number): Promise<void> {
    try {
      // Before migration 0003 new keys are not notified (main.ts migrates after the context
      // starts): wait for it rather than trust a view that cannot hear of new keys.
      const notified = await keyCreationIsNotified(this.db);
      if (generation !== this.generation) return;
      if (!notified) return this.retry(generation);
      const expected = await countKeys(this.db);
      if (generation !== this.generation) return;
      if (expected > MAX_PREFIXES) return this.tooMany(expected);
      let codes = new Float64Array(expected + 1024);
      let size = 0;
      for (let afterId = 0; ; ) {
        const page = await listPrefixesAfter(this.db, afterId, PAGE_SIZE);
        if (generation !== this.generation) return;
        for (const { prefix } of page) {
          const code = prefixCode(prefix);
          if (code === null) continue;
          if (size === codes.length) codes = grown(codes);
          codes[size++] = code;
        }
        if (page.length < PAGE_SIZE) break;
        afterId = page[page.length - 1]!.id;
      }
      if (size + this.added.size > MAX_PREFIXES) return this.tooMany(size + this.added.size);
      this.sorted = codes.slice(0, size).sort();
      for (const code of this.added) if (hasSorted(this.sorted, code)) this.added.delete(code);
      this.state = 'trusted';
      if (this.added.size >= MERGE_AT) this.merge();
    } catch (error) {
      if (generation !== this.generation) return;
      this.logger.warn({ err: error }, 'API key prefix view could not load; unknown prefixes are looked up in the database meanwhile');
      this.retry(generation);
    }
  }

  private retry(generation: number): void {
    setTimeout(() => {
      if (generation === this.generation) void this.load(generation);
    }, RETRY_MS).unref();
  }

  private tooMany(count: number): void {
    this.logger.warn({ keys: count, max: MAX_PREFIXES }, 'too many API keys for the prefix view; every prefix is looked up in the database');
    this.lost();
  }

  private contains(code: number): boolean {
    return this.added.has(code) || hasSorted(this.sorted, code);
  }

  private merge(): void {
    if (this.sorted.length + this.added.size > MAX_PREFIXES) return this.tooMany(this.sorted.length + this.added.size);
    const merged = new Float64Array(this.sorted.length + this.added.size);
    merged.set(this.sorted);
    let index = this.sorted.length;
    for (const code of this.added) merged[index++] = code;
    this.sorted = merged.sort();
    this.added.clear();
  }
}

function grown(codes: Float64Array): Float64Array<ArrayBuffer> {
  const larger = new Float64Array(codes.length * 2);
  larger.set(codes);
  return larger;
}

function hasSorted(codes: Float64Array, code: number): boolean {
  let low = 0;
  let high = codes.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const value = codes[middle]!;
    if (value === code) return true;
    if (value < code) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}

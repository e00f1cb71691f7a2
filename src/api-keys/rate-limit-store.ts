import { MemoryStore, type IncrementResponse, type Options, type Store } from 'express-rate-limit';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RedisStore } from 'rate-limit-redis';

// Redis is the shared counter; while it is unreachable each process falls back to its own
// in-memory window (the limit then holds per process instead of across processes), so the
// API keeps answering and keeps limiting. Redis is retried on every request.
class RedisWithLocalFallback implements Store {
  readonly localKeys = false;
  readonly prefix: string;
  private readonly local = new MemoryStore();
  private lastWarning = 0;

  constructor(
    private readonly redis: RedisStore,
    private readonly logger: Logger,
  ) {
    this.prefix = redis.prefix;
  }

  init(options: Options): void {
    this.local.init(options);
    this.redis.windowMs = options.windowMs;
    this.redis.incrementScriptSha = this.redis.loadIncrementScript().catch(() => '');
  }

  async increment(key: string): Promise<IncrementResponse> {
    try {
      // The script is loaded lazily and reloaded after any failure (e.g. Redis restarted empty).
      if (!(await this.redis.incrementScriptSha)) this.redis.incrementScriptSha = this.redis.loadIncrementScript();
      return await this.redis.increment(key);
    } catch (error) {
      this.redis.incrementScriptSha = Promise.resolve('');
      const now = Date.now();
      if (now - this.lastWarning > 10_000) {
        this.lastWarning = now;
        this.logger.error({ err: error }, 'rate limit store unreachable; limiting per process until Redis answers again');
      }
      return this.local.increment(key);
    }
  }

  async decrement(key: string): Promise<void> {
    await Promise.allSettled([this.redis.decrement(key), this.local.decrement(key)]);
  }

  async resetKey(key: string): Promise<void> {
    await Promise.allSettled([this.redis.resetKey(key), this.local.resetKey(key)]);
  }

  shutdown(): void {
    this.local.shutdown();
  }
}

/** Redis keys of the rate limit: this, then the API key's prefix (the limit counts per key). */
export const RATE_LIMIT_KEY_PREFIX = 'lead-intake:rl:';

export function createRateLimitStore(redis: Redis | null, logger: Logger): Store {
  if (!redis) return new MemoryStore();
  const redisStore = new RedisStore({
    prefix: RATE_LIMIT_KEY_PREFIX,
    sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<never>,
  });
  return new RedisWithLocalFallback(redisStore, logger);
}

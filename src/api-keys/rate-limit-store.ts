import { MemoryStore, type IncrementResponse, type Options, type Store } from 'express-rate-limit';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RedisStore } from 'rate-limit-redis';

// What rate-limit-redis's increment script does, by a count: the hits of one key asked for in
// one turn of the event loop are counted by one command (see RedisWithLocalFallback.increment).
const INCREMENT_BY_SCRIPT = `
local count = tonumber(ARGV[1])
local windowMs = tonumber(ARGV[2])
local timeToExpire = redis.call("PTTL", KEYS[1])
if timeToExpire <= 0 then
  redis.call("SET", KEYS[1], count, "PX", windowMs)
  return { count, windowMs }
end
return { redis.call("INCRBY", KEYS[1], count), timeToExpire }
`;

type CountingRedis = Redis & { rateLimitIncrementBy(key: string, count: number, windowMs: number): Promise<[number, number]> };

/** The hits of one key asked for in one turn of the event loop, counted by one Redis command. */
interface IncrementBatch {
  size: number;
  /** The key's count after the batch and when its window resets; null when Redis did not answer. */
  counted: Promise<{ totalHits: number; resetTime: Date } | null>;
}

// Redis is the shared counter; while it is unreachable each process falls back to its own
// in-memory window (the limit then holds per process instead of across processes), so the
// API keeps answering and keeps limiting. Redis is retried on every batch.
//
// Increments of one key that arrive in the same turn of the event loop (under load, several
// requests of a busy key are read from their sockets together) go to Redis as one INCRBY: each
// caller gets the count it would have got from its own INCR in arrival order, and Redis runs
// and answers one command instead of one per request. Decrements and resets are
// rate-limit-redis's own.
class RedisWithLocalFallback implements Store {
  readonly localKeys = false;
  readonly prefix: string;
  private readonly local = new MemoryStore();
  private readonly batches = new Map<string, IncrementBatch>();
  private windowMs = 60_000;
  private lastWarning = 0;

  constructor(
    private readonly client: CountingRedis,
    private readonly redis: RedisStore,
    private readonly logger: Logger,
  ) {
    this.prefix = redis.prefix;
  }

  init(options: Options): void {
    this.local.init(options);
    this.windowMs = options.windowMs;
  }

  async increment(key: string): Promise<IncrementResponse> {
    const batch = this.batches.get(key) ?? this.startBatch(key);
    const position = batch.size++;
    const counted = await batch.counted;
    if (!counted) return this.local.increment(key);
    return { totalHits: counted.totalHits - batch.size + 1 + position, resetTime: counted.resetTime };
  }

  private startBatch(key: string): IncrementBatch {
    const batch: IncrementBatch = {
      size: 0,
      // Sent once the turn's I/O callbacks have run, with the batch's final size.
      counted: new Promise<void>((resolve) => setImmediate(resolve))
        .then(() => {
          this.batches.delete(key);
          return this.client.rateLimitIncrementBy(this.redis.prefixKey(key), batch.size, this.windowMs);
        })
        .then(
          ([totalHits, timeToExpire]) => ({ totalHits, resetTime: new Date(Date.now() + timeToExpire) }),
          (error: unknown) => {
            const now = Date.now();
            if (now - this.lastWarning > 10_000) {
              this.lastWarning = now;
              this.logger.error({ err: error }, 'rate limit store unreachable; limiting per process until Redis answers again');
            }
            return null;
          },
        ),
    };
    this.batches.set(key, batch);
    return batch;
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
  redis.defineCommand('rateLimitIncrementBy', { numberOfKeys: 1, lua: INCREMENT_BY_SCRIPT });
  return new RedisWithLocalFallback(redis as CountingRedis, redisStore, logger);
}

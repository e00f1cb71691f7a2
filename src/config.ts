import { z } from 'zod';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'on', 'off', 'yes', 'no'])
  .transform((value) => ['true', '1', 'on', 'yes'].includes(value));

const positiveInt = z.coerce.number().int().positive();

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WORKER: booleanFlag.default(true),
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: booleanFlag.default(false),
  OUTBOX_POLL_MS: positiveInt.default(1000),
  WEBHOOK_RETRY_BASE_MS: positiveInt.default(30000),
  WEBHOOK_MAX_ATTEMPTS: positiveInt.default(6),
  WEBHOOK_TIMEOUT_MS: positiveInt.default(10000),
  RATE_LIMIT_PER_MINUTE: positiveInt.default(300),
  EMBEDDED_PG_DIR: z.string().min(1).default('.data/postgres'),
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
  DATABASE_POOL_SIZE: positiveInt.default(10),
  DOCUMENTATION_URL: z.string().url().default('http://localhost:3000/docs'),
});

export type Config = z.infer<typeof envSchema>;

export class ConfigError extends Error {}

// Fails fast with every problem listed, so a misconfigured deployment never half-starts.
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return parsed.data;
}

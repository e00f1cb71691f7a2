import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { isSecretKeyText } from './secrets/keyring.js';

/** A boolean as the environment and the CLI write it. */
export const booleanFlag = z.enum(['true', 'false', '1', '0', 'on', 'off', 'yes', 'no']).transform((value) => ['true', '1', 'on', 'yes'].includes(value));

const positiveInt = z.coerce.number().int().positive();

/**
 * Express's `trust proxy`: which hops' X-Forwarded-For names the client (the console's sign-in
 * throttle counts that address). false: none, the connection's own address; true: every hop;
 * a number: that many hops; or a comma-separated list of proxy addresses, CIDR ranges or
 * express's names (loopback, linklocal, uniquelocal).
 */
const trustProxy = z
  .string()
  .trim()
  .refine(
    (value) =>
      /^(true|false|\d{1,2})$/.test(value) ||
      value
        .split(',')
        .map((item) => item.trim())
        .every((item) => ['loopback', 'linklocal', 'uniquelocal'].includes(item) || ipaddr.isValid(item) || ipaddr.isValidCIDR(item)),
    'must be true, false, a number of hops, or a comma-separated list of addresses, CIDR ranges, loopback, linklocal or uniquelocal',
  )
  .transform((value): boolean | number | string[] => {
    if (value === 'true' || value === 'false') return value === 'true';
    if (/^\d+$/.test(value)) return Number(value);
    return value.split(',').map((item) => item.trim());
  });

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  // Unset: no metrics listener. Set: GET /metrics on this port of HOST (src/metrics/server.ts).
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WORKER: booleanFlag.default(true),
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: booleanFlag.default(false),
  OUTBOX_POLL_MS: positiveInt.default(1000),
  WEBHOOK_RETRY_BASE_MS: positiveInt.default(30000),
  WEBHOOK_MAX_ATTEMPTS: positiveInt.default(6),
  WEBHOOK_TIMEOUT_MS: positiveInt.default(10000),
  RATE_LIMIT_PER_MINUTE: positiveInt.default(300),
  // Requests of one API key this process works on at once; one more is answered 429 (src/http/middleware/concurrency-limit.ts).
  CONCURRENT_REQUESTS_PER_KEY: positiveInt.default(64),
  // Single writes waiting for a group in this process; one more is answered 503 (src/leads/intake/write-groups.ts).
  WRITE_QUEUE_LIMIT: positiveInt.default(512),
  EMBEDDED_PG_DIR: z.string().min(1).default('.data/postgres'),
  // Unset: derived from the data directory (see src/db/embedded/start.ts).
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  DATABASE_POOL_SIZE: positiveInt.default(10),
  // Longest an API request waits for a database connection before answering 503 (src/context.ts).
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt.default(1500),
  PUBLIC_URL: z
    .string()
    .url()
    .refine((url) => /^https?:\/\//.test(url), 'must be an http(s) URL')
    .optional(),
  DOCUMENTATION_URL: z.string().url().optional(),
  // Unset: the checkout's key file .data/secrets.key, created on first start (src/secrets/keyring.ts).
  SECRETS_KEY: z.string().refine(isSecretKeyText, 'must be 32 random bytes in base64, as `openssl rand -base64 32` prints them').optional(),
  SECRETS_KEY_PREVIOUS: z
    .string()
    .refine(
      (list) =>
        list
          .split(',')
          .filter((key) => key.trim() !== '')
          .every(isSecretKeyText),
      'must be a comma-separated list of keys, each 32 random bytes in base64',
    )
    .optional(),
  DELIVERY_RETENTION_DAYS: positiveInt.default(30),
  // Audit entries older than this are purged by housekeeping (src/audit/repository.ts).
  AUDIT_RETENTION_DAYS: positiveInt.default(365),
  TRUST_PROXY: trustProxy.default(false),
  // A console session ends after this long unused, and this long after signing in whatever its use.
  SESSION_IDLE_MINUTES: positiveInt.max(7 * 24 * 60).default(30),
  SESSION_MAX_HOURS: positiveInt.max(30 * 24).default(12),
  // An endpoint whose attempts have all failed for this long, at least this many in a row, is disabled (src/deliveries/endpoint-health.ts).
  ENDPOINT_DISABLE_AFTER_DAYS: z.coerce.number().positive().max(3650).default(5),
  ENDPOINT_DISABLE_AFTER_FAILURES: positiveInt.default(10),
});

/**
 * Where clients reach this service. Without PUBLIC_URL it is derived from HOST and PORT
 * (a wildcard bind address becomes `localhost`, the usual way in from the same machine).
 */
function publicUrl(env: { PUBLIC_URL?: string | undefined; HOST: string; PORT: number }): string {
  if (env.PUBLIC_URL) return env.PUBLIC_URL.replace(/\/+$/, '');
  const host = ['0.0.0.0', '::', '[::]'].includes(env.HOST) ? 'localhost' : env.HOST.includes(':') && !env.HOST.startsWith('[') ? `[${env.HOST}]` : env.HOST;
  return `http://${host}:${env.PORT}`;
}

const configSchema = envSchema
  .refine((env) => env.METRICS_PORT === undefined || env.METRICS_PORT === 0 || env.METRICS_PORT !== env.PORT, {
    path: ['METRICS_PORT'],
    message: 'must differ from PORT (the metrics have their own listener)',
  })
  .transform((env) => {
    const PUBLIC_URL = publicUrl(env);
    return { ...env, PUBLIC_URL, DOCUMENTATION_URL: env.DOCUMENTATION_URL ?? `${PUBLIC_URL}/docs` };
  });

export type Config = z.output<typeof configSchema>;

export class ConfigError extends Error {}

// Fails fast with every problem listed, so a misconfigured deployment never half-starts.
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return parsed.data;
}

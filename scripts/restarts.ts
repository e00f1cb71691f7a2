// `npm run restarts`: the service across a restart of the very PostgreSQL and Redis it runs on.
//
// CI runs it against the machine's shared servers; the caller says how to restart them
// (RESTART_POSTGRES, RESTART_REDIS: shell commands that return once the server accepts
// connections again). It checks the two recoveries nothing else exercises on real servers:
// - Redis comes back empty (no persistence), so the rate-limit script is gone: the store must
//   reload it and count in Redis again, not stay on the per-process fallback;
// - the API key cache's LISTEN connection dies with PostgreSQL: it must reconnect, so a key
//   revoked after the restart is refused within seconds (a cache that silently stopped
//   listening would keep accepting it).
// Exits 1 with the failures listed when a check fails.
//
//   DATABASE_URL=... REDIS_URL=... RESTART_POSTGRES='...' RESTART_REDIS='...' npm run restarts

import { execFileSync, execSync } from 'node:child_process';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { runCli } from '../test/support/cli.js';
import { baseEnvironment, ROOT, startService, type ServiceProcess } from '../test/support/service.js';
import { databaseUrl } from './database-url.js';
import { RATE_LIMIT_KEY_PREFIX } from '../src/api-keys/rate-limit-store.js';
import { parseToken } from '../src/api-keys/tokens.js';

const RATE_LIMIT = 300;
const RECOVERY_DEADLINE_MS = 10_000;
const REVOCATION_DEADLINE_MS = 5_000;

const log = (message: string) => process.stderr.write(`restarts: ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set (see the comment at the top of scripts/restarts.ts)`);
  return value;
}

/** Polls `probe` every 100 ms until it returns true; the milliseconds it took, or null at the deadline. */
async function within(deadlineMs: number, probe: () => Promise<boolean>): Promise<number | null> {
  const started = Date.now();
  while (Date.now() - started < deadlineMs) {
    if (await probe().catch(() => false)) return Date.now() - started;
    await sleep(100);
  }
  return null;
}

async function me(apiUrl: string, token: string): Promise<Response> {
  return fetch(`${apiUrl}/me`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5_000) });
}

async function createKey(env: Record<string, string>, workspaceId: number, userId: number, name: string): Promise<{ id: number; token: string }> {
  const result = await runCli(['key', 'create', '--workspace', String(workspaceId), '--user', String(userId), '--name', name, '--scopes', 'leads:read'], env);
  if (result.code !== 0) throw new Error(`key create failed: ${result.stderr}`);
  return result.json as { id: number; token: string };
}

async function main(): Promise<string[]> {
  const serverUrl = required('DATABASE_URL');
  const redisUrl = required('REDIS_URL');
  const restartPostgres = required('RESTART_POSTGRES');
  const restartRedis = required('RESTART_REDIS');
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-needed.mjs')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });

  const name = `restarts_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const env = { ...baseEnvironment(), DATABASE_URL: databaseUrl(serverUrl, name), REDIS_URL: redisUrl };
  const failures: string[] = [];
  let api: ServiceProcess | null = null;
  try {
    api = startService(process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], {
      env: { ...env, PORT: '0', HOST: '127.0.0.1', WORKER: 'off', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) },
    });
    const apiUrl = String((await api.waitForLog('Lead Intake API listening')).url);
    const workspace = (await runCli(['workspace', 'create', '--name', 'Restarts'], env)).json as { id: number };
    const user = (await runCli(['user', 'create', '--workspace', String(workspace.id), '--email', 'ops@example.com'], env)).json as { id: number };
    const revoked = await createKey(env, workspace.id, user.id, 'revoked after the PostgreSQL restart');
    const counted = await createKey(env, workspace.id, user.id, 'counted after the Redis restart');

    log('restarting Redis');
    execSync(restartRedis, { stdio: 'inherit' });
    const redisBack = await within(RECOVERY_DEADLINE_MS, async () => (await me(apiUrl, counted.token)).status === 200);
    if (redisBack === null) failures.push(`GET /me did not answer 200 within ${RECOVERY_DEADLINE_MS} ms of Redis coming back`);
    // Until ioredis has reconnected the store counts per process (by design); then it must
    // count in Redis again, which needs the script Redis lost with its restart.
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    // This key's counter only: another process on the same Redis (a bench, a second API) counts keys of its own.
    const counter = `${RATE_LIMIT_KEY_PREFIX}${parseToken(counted.token)!.prefix}`;
    const countedInRedis = async () => Number((await redis.get(counter)) ?? 0);
    const backOnRedis = await within(RECOVERY_DEADLINE_MS, async () => (await me(apiUrl, counted.token)).status === 200 && (await countedInRedis()) > 0);
    if (backOnRedis === null) failures.push(`the rate limit did not count in Redis again within ${RECOVERY_DEADLINE_MS} ms of its restart`);
    const before = await countedInRedis();
    let remaining = -1;
    for (let i = 0; i < 5; i += 1) remaining = Number(/r=(\d+)/.exec((await me(apiUrl, counted.token)).headers.get('ratelimit') ?? '')?.[1] ?? -1);
    const after = await countedInRedis();
    await redis.quit();
    if (after !== before + 5 || remaining !== RATE_LIMIT - after) {
      failures.push(
        `after the Redis restart 5 requests were not all counted in Redis: it went from ${before} to ${after}, RateLimit r=${remaining} (expected ${RATE_LIMIT} - ${after})`,
      );
    }
    log(`Redis: answering again after ${redisBack} ms, counting in Redis again after ${backOnRedis} ms; r=${remaining} with ${after} counted there`);

    log('restarting PostgreSQL');
    const listens = api.logs.filter((line) => line.msg === 'API key cache listening for key changes again').length;
    execSync(restartPostgres, { stdio: 'inherit' });
    const postgresBack = await within(RECOVERY_DEADLINE_MS, async () => (await me(apiUrl, revoked.token)).status === 200);
    if (postgresBack === null) failures.push(`GET /me did not answer 200 within ${RECOVERY_DEADLINE_MS} ms of PostgreSQL coming back`);
    const relistened = await within(RECOVERY_DEADLINE_MS, async () => api!.logs.filter((line) => line.msg === 'API key cache listening for key changes again').length > listens);
    if (relistened === null) failures.push('the API key cache did not report listening again after the PostgreSQL restart');
    if ((await me(apiUrl, revoked.token)).status !== 200) failures.push('the key to revoke was not accepted before its revocation');
    const revocation = await runCli(['key', 'revoke', '--id', String(revoked.id)], env);
    if (revocation.code !== 0) failures.push(`key revoke failed: ${revocation.stderr}`);
    const refused = await within(REVOCATION_DEADLINE_MS, async () => (await me(apiUrl, revoked.token)).status === 401);
    if (refused === null) failures.push(`a key revoked after the PostgreSQL restart was still accepted ${REVOCATION_DEADLINE_MS} ms later (key cache not listening)`);
    log(`PostgreSQL: answering again after ${postgresBack} ms; cache listening again after ${relistened} ms more; revoked key refused after ${refused} ms`);
    if (!api.alive()) failures.push(`the API exited: ${api.stderr.slice(-2000)}`);
    if (failures.length > 0) for (const line of api.logs.filter((entry) => (entry.level ?? 0) >= 40)) log(`API logged: ${JSON.stringify(line).slice(0, 500)}`);
  } finally {
    await api?.stop('SIGTERM');
    const cleanup = new pg.Client({ connectionString: serverUrl });
    await cleanup.connect();
    await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await cleanup.end();
  }
  return failures;
}

main().then(
  (failures) => {
    for (const failure of failures) process.stdout.write(`FAILED: ${failure}\n`);
    process.stdout.write(failures.length === 0 ? 'restarts: PASS\n' : 'restarts: FAIL\n');
    process.exit(failures.length === 0 ? 0 : 1);
  },
  (error: unknown) => {
    process.stderr.write(`restarts: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);

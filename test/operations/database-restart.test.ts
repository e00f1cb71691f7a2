import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { runCli } from '../support/cli.js';
import { eventually } from '../support/eventually.js';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';
import { expectDeliveriesMatchDocument, startReceiver, type Receiver } from '../support/receiver.js';
import { baseEnvironment, ROOT, startService, type LogLine, type ServiceProcess } from '../support/service.js';
import { fetchCheckedAgainstDocument } from '../support/document-check.js';

// A PostgreSQL restart (fast shutdown, as a maintenance window or a failover does) under
// `npm start`'s configuration (API + in-process worker) and under an API with WORKER=off
// beside `npm run worker`. The database is this test's own; the shared server is never touched.

const DOWN_MS = 2000;

let database: PrivatePostgres;
let receiver: Receiver;
const running: ServiceProcess[] = [];

beforeAll(async () => {
  database = await startPrivatePostgres('restart');
  receiver = await startReceiver({ databaseUrl: database.url });
}, 60_000);
afterEach(async () => {
  for (const service of running.splice(0)) await service.stop('SIGKILL');
  await expectDeliveriesMatchDocument(receiver);
});
afterAll(async () => {
  await receiver?.close();
  await database?.remove();
});

function start(entry: 'main.js' | 'worker-main.js', env: Record<string, string>): ServiceProcess {
  const service = startService(process.execPath, [path.join(ROOT, 'dist', 'src', entry)], {
    env: {
      ...baseEnvironment(),
      DATABASE_URL: database.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      OUTBOX_POLL_MS: '100',
      WEBHOOK_RETRY_BASE_MS: '100',
      ...env,
    },
  });
  running.push(service);
  return service;
}

/** A demo workspace and key (CLI), with a lead_created workflow posting to `receiver` at `hookPath`. */
async function tenantWithWorkflow(hookPath: string): Promise<{ token: string }> {
  const env = { DATABASE_URL: database.url, LOG_LEVEL: 'warn' };
  const demo = await runCli(['demo'], env);
  expect({ code: demo.code, stderr: demo.stderr }).toEqual({ code: 0, stderr: '' });
  const { workspace, key } = demo.json as { workspace: { id: number }; key: { token: string } };
  const workflow = await runCli(['workflow', 'create', '--workspace', String(workspace.id), '--trigger', 'lead_created', '--url', `${receiver.url}${hookPath}`], env);
  expect({ code: workflow.code, stderr: workflow.stderr }).toEqual({ code: 0, stderr: '' });
  return { token: key.token };
}

async function createLead(apiUrl: string, token: string, email: string): Promise<{ status: number; id: number | undefined }> {
  const response = await fetchCheckedAgainstDocument(`${apiUrl}/leads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Restart Test', email }),
  });
  const body = (await response.json()) as { data?: { id: number } };
  return { status: response.status, id: body.data?.id };
}

const deliveredTo = (hookPath: string, leadId: number) => async () =>
  receiver.requests.some((request) => request.path === hookPath && (JSON.parse(request.body) as { lead_id?: number }).lead_id === leadId);

/** Errors logged more than once by one source (a pool, the worker): an outage must be reported once per source. */
function repeatedErrors(logs: LogLine[]): string[] {
  const counts = new Map<string, number>();
  for (const line of logs) {
    if ((line.level ?? 0) < 50) continue;
    const source = `${String(line.pool ?? line.worker ?? '')} ${String(line.msg)}`;
    counts.set(source, (counts.get(source) ?? 0) + 1);
  }
  return [...counts].filter(([, count]) => count > 1).map(([message, count]) => `${count}x ${message}`);
}

/** 'alive', or how it ended and what it said last (the reason shows in the failure). */
const liveness = (service: ServiceProcess) =>
  service.alive()
    ? 'alive'
    : `exited: ${service.stderr.slice(-3000)} ${JSON.stringify(service.logs.filter((line) => (line.level ?? 0) >= 60 || line.reason).map((line) => ({ ...line, err: (line.err as { stack?: string } | undefined)?.stack })))}`;

const count = (logs: LogLine[], pattern: RegExp) => logs.filter((line) => pattern.test(String(line.msg))).length;

/** The run's part that matters: a lead before, the restart, the first request after it, and its delivery. */
async function survivesRestart(apiUrl: string, hookPath: string, processes: ServiceProcess[]): Promise<void> {
  const { token } = await tenantWithWorkflow(hookPath);
  const before = await createLead(apiUrl, token, `before-${hookPath.slice(1)}@restart.example`);
  expect(before.status).toBe(201);
  await eventually(deliveredTo(hookPath, before.id!), 20_000, 50);

  await database.restart(DOWN_MS);
  expect(processes.map(liveness)).toEqual(processes.map(() => 'alive'));

  // No retry: the first request once the database is back must succeed.
  const after = await createLead(apiUrl, token, `after-${hookPath.slice(1)}@restart.example`);
  expect(after.status).toBe(201);
  await eventually(deliveredTo(hookPath, after.id!), 20_000, 50);
  expect(processes.map(liveness)).toEqual(processes.map(() => 'alive'));
}

describe('a PostgreSQL restart', () => {
  it('leaves npm start (API and in-process worker) running and serving', async () => {
    const api = start('main.js', { WORKER: 'on' });
    const { url } = await api.waitForLog('Lead Intake API listening');
    await survivesRestart(String(url), '/in-process', [api]);

    // The worker noticed the outage while polling every 100 ms, said so once, and resumed by itself.
    expect(count(api.logs, /^worker paused/)).toBe(1);
    expect(count(api.logs, /^worker resumed/)).toBe(1);
    expect(repeatedErrors(api.logs)).toEqual([]);
    expect(await api.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  }, 120_000);

  it('leaves an API with WORKER=off and npm run worker running and serving', async () => {
    const api = start('main.js', { WORKER: 'off' });
    const worker = start('worker-main.js', {});
    const { url } = await api.waitForLog('Lead Intake API listening');
    await worker.waitForLog('worker started');
    await survivesRestart(String(url), '/separate-worker', [api, worker]);

    expect(count(worker.logs, /^worker paused/)).toBe(1);
    expect(count(worker.logs, /^worker resumed/)).toBe(1);
    expect(repeatedErrors(worker.logs)).toEqual([]);
    expect(repeatedErrors(api.logs)).toEqual([]);
    expect(await Promise.all([api.stop('SIGTERM'), worker.stop('SIGTERM')])).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
  }, 120_000);
});

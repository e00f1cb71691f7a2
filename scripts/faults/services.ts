// The service as the fault tests run it: the compiled API and worker as child processes,
// a tenant whose workflows post to the test's receiver, and waiting for the outbox to drain.
// Shared by `npm run faults` (scripts/faults.ts) and `npm run failover` (scripts/failover.ts).

import path from 'node:path';
import type pg from 'pg';
import { runCli } from '../../test/support/cli.js';
import type { Receiver } from '../../test/support/receiver.js';
import { baseEnvironment, ROOT, startService, type ServiceProcess } from '../../test/support/service.js';
import { VIP_TAG } from './traffic.js';

/** A claim of a killed worker expires after 2 x WEBHOOK_TIMEOUT_MS + 5 s (9 s here); another worker then sends it. */
export const WORKER_ENV = { OUTBOX_POLL_MS: '200', WEBHOOK_RETRY_BASE_MS: '500', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' };
const DRAIN_TIMEOUT_MS = 90_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every child process started, so a run that fails half-way leaves none behind. */
export class Services {
  readonly children: ServiceProcess[] = [];

  start(entry: 'main.js' | 'worker-main.js', databaseUrl: string, env: Record<string, string>): ServiceProcess {
    const child = startService(process.execPath, [path.join(ROOT, 'dist', 'src', entry)], {
      env: { ...baseEnvironment(), DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', ...env },
    });
    this.children.push(child);
    return child;
  }

  /** An API process (WORKER=off, no practical rate limit) on a free port; resolves with its /api/v1 URL once it listens. */
  async startApi(databaseUrl: string, env: Record<string, string> = {}): Promise<{ service: ServiceProcess; url: string }> {
    const service = this.start('main.js', databaseUrl, { PORT: '0', HOST: '127.0.0.1', WORKER: 'off', RATE_LIMIT_PER_MINUTE: '100000000', ...env });
    return { service, url: String((await service.waitForLog('Lead Intake API listening')).url) };
  }

  async startWorker(databaseUrl: string): Promise<ServiceProcess> {
    const worker = this.start('worker-main.js', databaseUrl, WORKER_ENV);
    await worker.waitForLog('worker started');
    return worker;
  }

  async killAll(): Promise<void> {
    await Promise.all(this.children.map((child) => child.stop('SIGKILL')));
  }
}

/** A workspace with a key, a lead_created workflow and a tag_added (VIP_TAG) workflow posting to `receiver` under `/<label>/`. */
export async function tenant(databaseUrl: string, receiver: Receiver, label: string): Promise<{ workspaceId: number; token: string }> {
  const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' };
  const demo = await runCli(['demo'], env);
  if (demo.code !== 0) throw new Error(`cli demo failed: ${demo.stderr}`);
  const { workspace, key } = demo.json as { workspace: { id: number }; key: { token: string } };
  for (const trigger of [
    ['--trigger', 'lead_created'],
    ['--trigger', 'tag_added', '--tag', VIP_TAG],
  ]) {
    const workflow = await runCli(['workflow', 'create', '--workspace', String(workspace.id), ...trigger, '--url', `${receiver.url}/${label}/${trigger[1]}`], env);
    if (workflow.code !== 0) throw new Error(`cli workflow create failed: ${workflow.stderr}`);
  }
  return { workspaceId: workspace.id, token: key.token };
}

/** When the receiver next gets a webhook under `/<label>/` (polled every 20 ms, for up to a minute), or null. */
export async function nextWebhook(receiver: Receiver, label: string): Promise<number | null> {
  const seen = receiver.requests.length;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(20)) {
    if (receiver.requests.slice(seen).some((request) => request.path.startsWith(`/${label}/`))) return Date.now();
  }
  return null;
}

/** Until every event of the workspace is fanned out, no delivery is pending and the receiver has every webhook-id; returns how long it took. */
export async function drain(db: pg.Client, workspaceId: number, receiver: Receiver): Promise<number> {
  const started = Date.now();
  for (;;) {
    const { rows } = await db.query<{ open: number; ids: string[] }>(
      `
      SELECT (SELECT count(*) FROM outbox WHERE workspace_id = $1 AND processed_at IS NULL AND topic IN ('lead.created', 'lead.tag_added'))::int
        + (SELECT count(*) FROM deliveries WHERE workspace_id = $1 AND branch = 'pending')::int AS open,
        (SELECT coalesce(array_agg(message_id), '{}') FROM deliveries WHERE workspace_id = $1) AS ids`,
      [workspaceId],
    );
    const received = new Set(receiver.requests.map((request) => String(request.headers['webhook-id'])));
    if (rows[0]!.open === 0 && rows[0]!.ids.every((id) => received.has(id))) return Date.now() - started;
    if (Date.now() - started > DRAIN_TIMEOUT_MS) return Date.now() - started;
    await sleep(250);
  }
}

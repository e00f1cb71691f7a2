import { afterAll, beforeAll, beforeEach, expect } from '@jest/globals';
import { processAll } from '../../src/outbound/worker.js';
import { startTestApp, type TestApp } from './app.js';
import { runCli } from './cli.js';
import { startReceiver, type Receiver } from './receiver.js';

/** Environment for an app that may deliver to the test's receiver on 127.0.0.1. */
export const LOCAL_DELIVERY_ENV = {
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_RETRY_BASE_MS: '10',
  WEBHOOK_MAX_ATTEMPTS: '3',
  WEBHOOK_TIMEOUT_MS: '2000',
};

/** Runs one admin CLI command against the app's database; expects success and returns its JSON. */
export async function cli<T = Record<string, any>>(t: TestApp, args: string[], env: Record<string, string> = {}): Promise<T> {
  const result = await runCli(args, { DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'warn', ...LOCAL_DELIVERY_ENV, ...env });
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return result.json as T;
}

/** Runs one admin CLI command that must be refused; returns the error body. */
export async function cliRefused(t: TestApp, args: string[]): Promise<{ error: string; message: string }> {
  const result = await runCli(args, { DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'warn', ...LOCAL_DELIVERY_ENV });
  expect(result.code).not.toBe(0);
  expect(result.stdout).toBe('');
  return result.error!;
}

/** Drains the outbox and every due delivery, as the worker would. */
export const drain = (t: TestApp) => processAll(t.ctx);

export interface ListedDelivery {
  id: number;
  event: string;
  sender: string;
  trigger: string;
  lead_id: number | null;
  workflow_id: number | null;
  connector_id: number | null;
  url: string;
  attempts: number;
  branch: string;
  status_code: number | null;
  error: string | null;
  reply: string | null;
}

export const deliveries = (t: TestApp, workspaceId: number, leadId?: number) =>
  cli<ListedDelivery[]>(t, ['deliveries', 'list', '--workspace', String(workspaceId), ...(leadId ? ['--lead', String(leadId)] : [])]);

/**
 * One app (private database, deliveries to 127.0.0.1 allowed) and one receiver for a test
 * file; the receiver is reset before each test. Read the fields inside hooks and tests.
 */
export function outboundTestBed(): { t: TestApp; receiver: Receiver } {
  const bed = {} as { t: TestApp; receiver: Receiver };
  beforeAll(async () => {
    bed.t = await startTestApp({ env: LOCAL_DELIVERY_ENV });
    bed.receiver = await startReceiver();
  });
  afterAll(async () => {
    await bed.receiver.close();
    await bed.t.close();
  });
  beforeEach(() => bed.receiver.reset());
  return bed;
}

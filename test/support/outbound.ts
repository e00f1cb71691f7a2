import { expect } from '@jest/globals';
import { listDeliveries, type DeliveryListItem } from '../../src/deliveries/repository.js';
import { createConnector } from '../../src/connectors/service.js';
import type { Db } from '../../src/db/connect.js';
import { createWorkflow } from '../../src/workflows/service.js';
import { WorkerContext } from '../../src/worker/context.js';
import type { TestApp } from './app.js';
import { cliError, cliJson } from './cli.js';
import { eventually } from './eventually.js';
import type { Tenant, TenantOptions } from './fixtures.js';
import { testBed } from './test-bed.js';
import { postLead, uniqueEmail } from './requests.js';
import { OPERATOR } from '../../src/audit/service.js';

/** A JSON POST connector to `url` with no auth, mapping, constant fields or headers, made by the operator; `extra` overrides. */
export const plainConnector = (db: Db, workspaceId: number, url: string, extra: Partial<Parameters<typeof createConnector>[2]> = {}) =>
  createConnector(db, OPERATOR, {
    workspace_id: workspaceId,
    url,
    method: 'POST',
    format: 'json',
    auth: { type: 'none' },
    mapping: [],
    fields: [],
    headers: [],
    auto_push: false,
    ...extra,
  });

/** Posts a new person (no website analysis) to the tenant's workspace; the created lead's id. */
export async function postNewPerson(t: TestApp, tenant: Tenant): Promise<number> {
  const response = await postLead(t, tenant, { name: 'Ada Lovelace', email: uniqueEmail('ada', 'analytical.test'), enrich: false });
  expect(response.status).toBe(201);
  return response.body.data.id as number;
}

/** Environment for an app that may deliver to the test's receiver on 127.0.0.1. */
export const LOCAL_DELIVERY_ENV = {
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_RETRY_BASE_MS: '10',
  WEBHOOK_MAX_ATTEMPTS: '3',
  WEBHOOK_TIMEOUT_MS: '2000',
};

/** Runs one admin CLI command against the app's database; expects success and returns its JSON. */
export const cli = <T = Record<string, any>>(t: TestApp, args: string[], env: Record<string, string> = {}): Promise<T> =>
  cliJson<T>(t.databaseUrl, args, { ...LOCAL_DELIVERY_ENV, ...env });

/** Runs one admin CLI command that must be refused; returns the error body. */
export const cliRefused = (t: TestApp, args: string[]) => cliError(t.databaseUrl, args, LOCAL_DELIVERY_ENV);

/** Drains the outbox and every due delivery, as the worker would. */
export const drain = (t: TestApp) => new WorkerContext(t.ctx).processAll();

/**
 * The workspace's (or the lead's) deliveries as `deliveries list` prints them, read through the
 * repository it prints: tests poll it, and a CLI process per poll costs seconds on a loaded
 * machine (the command itself is tested in test/cli).
 */
export const deliveries = (t: TestApp, workspaceId: number, leadId?: number) => listDeliveries(t.ctx.db, workspaceId, { leadId });

/** A lead_created workflow of the tenant's workspace that posts JSON to `url`, made as `workflow create --url` makes it. */
export const workflowTo = (t: TestApp, tenant: Tenant, url: string) =>
  createWorkflow(t.ctx.db, OPERATOR, {
    workspaceId: tenant.workspaceId,
    trigger: 'lead_created',
    block: { endpoint: 'url', url, method: 'POST', format: 'json', headers: [], fields: [] },
  });

/** Drains, retries included as they fall due, until the workspace's (or the lead's) first delivery is on `branch`. */
export const drainUntilBranch = (t: TestApp, workspaceId: number, branch: DeliveryListItem['branch'], leadId?: number) =>
  eventually(
    async () => {
      await drain(t);
      return (await deliveries(t, workspaceId, leadId))[0]?.branch === branch;
    },
    10000,
    50,
  );

/**
 * The test bed of the outbound tests: one app whose deliveries may reach 127.0.0.1 and one
 * receiver, reset before each test, whose deliveries are checked against the document's
 * webhooks after each test; the tenants a whole file shares (by default none: each test
 * makes its own).
 */
export const outboundTestBed = <const Tenants extends readonly TenantOptions[] = []>(tenants?: Tenants) =>
  testBed({ app: { env: LOCAL_DELIVERY_ENV }, tenants: tenants ?? ([] as unknown as Tenants), receiver: true });

import { afterAll, afterEach, beforeAll, beforeEach } from '@jest/globals';
import { startTestApp, type TestApp, type TestAppOptions } from './app.js';
import { createTenant, type Tenant, type TenantOptions } from './fixtures.js';
import { expectDeliveriesMatchDocument, startReceiver, type Receiver } from './receiver.js';

export interface TestBed<Tenants extends readonly TenantOptions[]> {
  t: TestApp;
  /** One tenant (workspace, admin user, API key) per entry of `tenants`, in that order. */
  tenants: { -readonly [Index in keyof Tenants]: Tenant };
  /**
   * With `receiver: true`: a webhook receiver on 127.0.0.1, reset before each test; every
   * delivery a test made it receive is checked against the document's webhooks after it.
   */
  receiver: Receiver;
  /**
   * Closes what a test file opened on the bed's database before the bed drops it (jest runs
   * afterAll hooks in the order they were declared, the bed's first).
   */
  closeFirst(close: () => Promise<unknown>): void;
}

/**
 * What a test file runs against: the app on a private database, the tenants it asks for (by
 * default one, with every scope) and, with `receiver: true`, a receiver for deliveries; made
 * before the file's tests and closed after them. Read the fields inside hooks and tests:
 * `beforeAll(() => { ({ t, tenants: [tenant] } = bed); })`.
 */
export function testBed<const Tenants extends readonly TenantOptions[] = [{}]>(options: { app?: TestAppOptions; tenants?: Tenants; receiver?: boolean } = {}): TestBed<Tenants> {
  const closing: Array<() => Promise<unknown>> = [];
  const bed = {
    closeFirst: (close) => {
      closing.push(close);
    },
  } as TestBed<Tenants>;
  beforeAll(async () => {
    bed.t = await startTestApp(options.app);
    const tenants: Tenant[] = [];
    for (const tenant of options.tenants ?? [{}]) tenants.push(await createTenant(bed.t.ctx.db, tenant));
    bed.tenants = tenants as TestBed<Tenants>['tenants'];
    if (options.receiver) bed.receiver = await startReceiver({ databaseUrl: bed.t.databaseUrl });
  });
  afterAll(async () => {
    for (const close of closing) await close();
    await bed.receiver?.close();
    await bed.t?.close();
  });
  if (options.receiver) {
    beforeEach(() => bed.receiver.reset());
    afterEach(() => expectDeliveriesMatchDocument(bed.receiver));
  }
  return bed;
}

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import pg from 'pg';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { baseEnvironment, ROOT, startService, type ServiceProcess } from '../support/service.js';
import { lockWaiters as waitingOnLocks } from '../support/held-writes.js';

// SIGKILL of the API process while a group of POST /leads calls is inside its transaction:
// what was acknowledged before stays, and nothing of the group is left half-written (its new
// people were written but not committed, so none of their rows, keys or events remain).

let database: TestDatabase;
let api: ServiceProcess;
let url: string;
let token: string;
const admin = () => new pg.Client({ connectionString: database.url });

beforeAll(async () => {
  database = await createTestDatabase();
  api = startService(process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], {
    env: { ...baseEnvironment(), DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'info', WORKER: 'off' },
  });
  url = String((await api.waitForLog('Lead Intake API listening')).url);
  const demo = await runCli(['demo'], { DATABASE_URL: database.url, LOG_LEVEL: 'warn' });
  token = (demo.json as { key: { token: string } }).key.token;
}, 60_000);
afterAll(async () => {
  if (api?.alive()) await api.stop('SIGKILL');
  await database?.drop();
});

const post = (body: Record<string, unknown>) =>
  fetch(`${url}/leads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as { data: { id: number } } }));

/** A connection holding a lead's row locked. */
async function lock(leadId: number): Promise<pg.Client> {
  const client = admin();
  client.on('error', () => {});
  await client.connect();
  await client.query('BEGIN');
  // By its whole key: on Citus a FOR UPDATE must name the workspace (one shard).
  const {
    rows: [lead],
  } = await client.query<{ workspace_id: number }>('SELECT workspace_id FROM leads WHERE id = $1', [leadId]);
  await client.query('SELECT id FROM leads WHERE workspace_id = $1 AND id = $2 FOR UPDATE', [lead!.workspace_id, leadId]);
  return client;
}

async function lockWaiters(): Promise<number> {
  const client = admin();
  await client.connect();
  try {
    return (await waitingOnLocks(client)).length;
  } finally {
    await client.end();
  }
}

describe('SIGKILL of the API in the middle of a group', () => {
  it('keeps every acknowledged lead and leaves nothing of the group behind', async () => {
    const acknowledged = [];
    for (const n of [1, 2, 3, 4, 5]) acknowledged.push(await post({ name: `Kept ${n}`, email: `kept${n}@killco.example` }));
    expect(acknowledged.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201]);
    const [gate, stuck] = [acknowledged[0]!, acknowledged[2]!];

    // The working group waits on a locked lead; the group under test queues behind it (fewer
    // calls than GROUP_FILL start no group beside it: src/leads/intake/write-groups.ts).
    const gates = [await lock(gate.body.data.id)];
    const stuckLock = await lock(stuck.body.data.id);
    const blockers = [post({ name: 'Blocker A', email: 'kept1@killco.example' })];
    await eventually(async () => (await lockWaiters()) === 1, 10_000, 10);
    const lost = [1, 2, 3].map((n) => post({ name: `Lost ${n}`, email: `lost${n}@killco.example`, phone: `+1 303 555 01${10 + n}` }).catch(() => null));
    const stuckUpdate = post({ name: 'Stuck', email: 'kept3@killco.example' }).catch(() => null);
    // Nothing the process serves here shows its queue: give the four calls time to arrive
    // (a call arriving late only runs in a later group, which the kill ends just the same).
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const gate of gates) {
      await gate.query('COMMIT');
      await gate.end();
    }
    expect((await Promise.all(blockers)).map((answer) => answer.status)).toEqual([200]);
    // The group runs: its new people are written, then it waits on the stuck lead.
    await eventually(async () => (await lockWaiters()) === 1, 10_000, 10);
    await api.stop('SIGKILL');
    await stuckLock.query('COMMIT');
    await stuckLock.end();
    expect(await Promise.all(lost)).toEqual([null, null, null]);
    expect(await stuckUpdate).toBeNull();

    const client = admin();
    await client.connect();
    try {
      const count = async (text: string, values: unknown[] = []) => Number((await client.query<{ n: string }>(text, values)).rows[0]!.n);
      // Acknowledged: every lead, and the blocker's update.
      expect(await count(`SELECT count(*) AS n FROM leads WHERE id = ANY($1::bigint[])`, [acknowledged.map((answer) => answer.body.data.id)])).toBe(5);
      expect(await count(`SELECT count(*) AS n FROM leads WHERE name = 'Blocker A'`)).toBe(1);
      // The group: nothing at all (no lead, no match key, no event), and the stuck lead untouched.
      expect(await count(`SELECT count(*) AS n FROM leads WHERE name LIKE 'Lost %' OR name = 'Stuck'`)).toBe(0);
      expect(await count(`SELECT count(*) AS n FROM lead_identities WHERE value LIKE 'lost%' OR value LIKE '%30355501%'`)).toBe(0);
      expect(await count(`SELECT count(*) AS n FROM leads`)).toBe(5);
      expect(await count(`SELECT count(*) AS n FROM outbox WHERE topic = 'lead.created'`)).toBe(5);
    } finally {
      await client.end();
    }
  }, 60_000);
});

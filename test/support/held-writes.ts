import { expect } from '@jest/globals';
import pg from 'pg';
import { GROUP_FILL } from '../../src/leads/intake/write-groups.js';
import type { TestApp } from './app.js';
import { readTestEnvironment } from './env.js';
import { eventually } from './eventually.js';
import type { Tenant } from './fixtures.js';
import { postLead, sentNow, uniqueEmail } from './requests.js';

// Writes a test holds up for as long as it needs: a lead whose row a connection of the test
// keeps locked, so any write that updates that lead waits in its transaction until released.

export interface LockedLead {
  leadId: number;
  /** The lead's email: a write sending it updates the lead, and waits. */
  email: string;
  release(): Promise<void>;
}

/** A new lead of the tenant, and a connection holding its row locked until `release`. */
export async function lockedLead(t: TestApp, tenant: Tenant): Promise<LockedLead> {
  const created = await postLead(t, tenant, { name: 'Locked', email: uniqueEmail('locked') });
  const client = new pg.Client({ connectionString: t.databaseUrl });
  client.on('error', () => {});
  await client.connect();
  await client.query('BEGIN');
  // By its whole key: on Citus a FOR UPDATE must name the workspace (one shard).
  await client.query('SELECT id FROM leads WHERE workspace_id = $1 AND id = $2 FOR UPDATE', [tenant.workspaceId, created.body.data.id]);
  return {
    leadId: created.body.data.id,
    email: created.body.data.emails[0],
    release: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/** A statement (its text in `column`) that waits on a locked lead row: a FOR UPDATE, or an UPDATE of leads (the intake's merge of an existing person). */
const waitsOnLeadRows = (column: string) => `(${column} ILIKE '%for update%' OR ${column} ILIKE '%update %leads% set%')`;

/**
 * The backends of the app's database waiting on a lead's row lock (see waitsOnLeadRows), as ids
 * pg_terminate_backend takes: process ids, or on Citus (where the statement waits on a worker
 * node) the global ids of the coordinator's backends.
 */
export async function lockWaiters(db: pg.Client | pg.Pool): Promise<number[]> {
  const { rows } = await db.query<{ id: string }>(
    readTestEnvironment().citus
      ? // citus_lock_waits is the cluster's, every database's: the other test files' too.
        `SELECT DISTINCT waiting_gpid AS id FROM citus_lock_waits WHERE ${waitsOnLeadRows('blocked_statement')}
          AND waiting_gpid IN (SELECT global_pid FROM citus_stat_activity WHERE datname = current_database())`
      : `SELECT pid AS id FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND ${waitsOnLeadRows('query')}`,
  );
  return rows.map((row) => Number(row.id));
}

/** Ends a backend lockWaiters named (Citus overloads pg_terminate_backend for global ids). */
export async function terminateBackend(db: pg.Client | pg.Pool, id: number): Promise<void> {
  await db.query(`SELECT pg_terminate_backend($1::${readTestEnvironment().citus ? 'bigint' : 'integer'})`, [id]);
}

/**
 * Resolves once `until` holds for the number of statements of the app's database waiting on a
 * lead's row lock (a number: exactly that many). Asked over a connection of its
 * own, so a pool the app has exhausted does not hold the question up.
 */
export async function lockWaits(t: TestApp, until: number | ((waits: number) => boolean)): Promise<void> {
  const client = new pg.Client({ connectionString: t.databaseUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    await eventually(
      async () => {
        const waiting = (await lockWaiters(client)).length;
        return typeof until === 'number' ? waiting === until : until(waiting);
      },
      10_000,
      5,
    );
  } finally {
    await client.end();
  }
}

/**
 * Every group the process may have working at once, each waiting on a lead the test holds
 * locked, so requests sent meanwhile queue for the next group: the group a request starts when
 * none works (one blocker), and each group GROUP_FILL waiting requests start beside those
 * (GROUP_FILL blockers of another locked lead each; none when the write queue holds fewer).
 */
export async function occupyGroups(t: TestApp, tenant: Tenant): Promise<{ release(): Promise<void>; finished(): Promise<void> }> {
  const beside = t.ctx.config.WRITE_QUEUE_LIMIT >= GROUP_FILL ? t.ctx.writeGroups.workingGroups - 1 : 0;
  const gates = await Promise.all(Array.from({ length: 1 + beside }, () => lockedLead(t, tenant)));
  const block = (gate: LockedLead) => sentNow(postLead(t, tenant, { name: 'Blocker', email: gate.email }));
  const blockers = [block(gates[0]!)];
  await lockWaits(t, 1);
  for (let group = 1; group <= beside; group++) {
    blockers.push(...Array.from({ length: GROUP_FILL }, () => block(gates[group]!)));
    await lockWaits(t, group + 1);
  }
  return {
    release: async () => {
      for (const gate of gates) await gate.release();
    },
    finished: async () => {
      for (const blocker of blockers) expect((await blocker).status).toBe(200);
    },
  };
}

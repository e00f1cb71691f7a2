import { afterAll, beforeAll, expect, it } from '@jest/globals';
import path from 'node:path';
import pg from 'pg';
import { sessionName } from '../../src/db/session-name.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { baseEnvironment, ROOT, startService, type ServiceProcess } from '../support/service.js';

// An operator (and the bench) reading pg_stat_activity can tell which process and which of its
// pools holds each connection: every session of `npm start` names itself (sessionName).

let database: TestDatabase;
let observer: pg.Client;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
  observer = new pg.Client({ connectionString: database.url, application_name: 'session-names test' });
  await observer.connect();
});
afterAll(async () => {
  await service?.stop();
  await observer?.end();
  await database?.drop();
});

it("names each session of npm start after its pool and the process's pid", async () => {
  service = startService(process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], {
    env: { ...baseEnvironment(), DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'info' },
  });
  await service.waitForLog('Lead Intake API listening');
  const pid = service.child.pid!;
  const expected = ['api', 'api-key-listen', 'worker'].map((pool) => sessionName(pool, pid)).sort();
  let names: string[] = [];
  // The worker's pool opens on its first step; the start's migration session closes before the API listens.
  await eventually(async () => {
    const { rows } = await observer.query<{ name: string }>(
      `SELECT DISTINCT application_name AS name FROM pg_stat_activity
       WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    names = rows.map((row) => row.name).sort();
    return names.length === expected.length;
  }, 10_000).catch(() => {});
  expect(names).toEqual(expected);
});

// The PostgreSQL-only ceiling: the statements a request cannot avoid, sent straight through
// pg with the service's pool size and the bench's concurrency, without HTTP, express or any
// other Node work. Run as its own process: `tsx scripts/bench/pg-ceiling.ts <json spec>`;
// prints { statementsPerSecond, statements }.
//
//   insert:     the baseline's one INSERT ... RETURNING (autocommit);
//   lead-write: the service's own write of a new lead (insertNewLeads from dist:
//               the lead, its three match keys, two tags and its lead.created event in one
//               statement, autocommit), for new people with a company, two tags, a phone and
//               a LinkedIn URL, like scenario 3.
// Their ratio bounds what scenario 3 can reach against the INSERT baseline on this machine.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';
import { BASELINE_INSERT, prepareBaselineTable } from './baseline-table.js';

interface Spec {
  databaseUrl: string;
  mode: 'insert' | 'lead-write';
  workspaceId: number;
  concurrency: number;
  poolSize: number;
  warmupSeconds: number;
  durationSeconds: number;
}

const ROOT = path.resolve(import.meta.dirname, '../..');
const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const salt = Math.random().toString(36).slice(2, 7);
const phoneOffset = 5_000_000_000 + Math.floor(Math.random() * 100) * 1_000_000;

async function main(): Promise<void> {
  // Typed as the sources, so a changed signature fails the type check instead of the run.
  const { createDb, createPool } = (await import(pathToFileURL(path.join(ROOT, 'dist/src/db/connect.js')).href)) as typeof import('../../src/db/connect.js');
  const { insertNewLeads } = (await import(
    pathToFileURL(path.join(ROOT, 'dist/src/leads/new-leads-repository.js')).href
  )) as typeof import('../../src/leads/new-leads-repository.js');
  const pool: pg.Pool = createPool(spec.databaseUrl, spec.poolSize, { logger: pino({ level: 'error' }, pino.destination(2)), name: 'bench' });
  const db = createDb(pool);

  let work: (n: number) => Promise<unknown>;
  if (spec.mode === 'insert') {
    const payload = JSON.stringify({
      name: 'Bench Person',
      email: 'p@firm1.example',
      phone: '+1 2000000001',
      linkedin_url: 'https://www.linkedin.com/in/bench',
      job_title: 'Buyer',
      tags: ['bench', 'wave-1'],
    });
    await prepareBaselineTable(pool);
    work = () => pool.query(BASELINE_INSERT, [spec.workspaceId, payload]);
  } else {
    const { rows: companies } = await pool.query<{ id: number }>('SELECT id FROM companies WHERE workspace_id = $1 ORDER BY id LIMIT 500', [spec.workspaceId]);
    const { rows: tags } = await pool.query<{ id: number }>('SELECT id FROM tags WHERE workspace_id = $1 ORDER BY id LIMIT 10', [spec.workspaceId]);
    if (companies.length === 0 || tags.length < 2) throw new Error('the workspace needs companies and tags (run the intake scenarios first)');
    work = (n) => {
      const email = `ceiling${salt}-${n}@firm${n % 500}.example`;
      const phone = String(phoneOffset + n);
      const handle = `ceiling-${salt}-${n}`;
      return insertNewLeads(
        db,
        [
          {
            workspaceId: spec.workspaceId,
            values: {
              name: `Ceiling Person ${n}`,
              job_title: 'Buyer',
              company_id: companies[n % companies.length]!.id,
              emails: [email],
              phones: [`1${phone}`],
              links: [{ type: 'linkedin', url: `https://www.linkedin.com/in/${handle}` }],
              locations: [],
              custom_fields: {},
            },
            keys: [
              { kind: 'email', value: email },
              { kind: 'linkedin', value: handle },
              { kind: 'phone', value: phone },
            ],
            tagIds: [tags[0]!.id, tags[1 + (n % (tags.length - 1))]!.id],
            events: [{ topic: 'lead.created' }],
          },
        ],
        { records: true },
      );
    };
  }

  let counter = 0;
  const runFor = async (seconds: number) => {
    const deadline = performance.now() + seconds * 1000;
    let done = 0;
    await Promise.all(
      Array.from({ length: spec.concurrency }, async () => {
        while (performance.now() < deadline) {
          await work(++counter);
          done += 1;
        }
      }),
    );
    return done;
  };
  if (spec.warmupSeconds > 0) await runFor(spec.warmupSeconds);
  const started = performance.now();
  const statements = await runFor(spec.durationSeconds);
  const seconds = (performance.now() - started) / 1000;
  await db.destroy();
  process.stdout.write(`${JSON.stringify({ statementsPerSecond: statements / seconds, statements })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`pg-ceiling failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

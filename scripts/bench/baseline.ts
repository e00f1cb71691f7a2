// The reference servers the benchmark compares against, on the same machine and load. Each is
// a bare express 5 app with a pg pool of 10 (the service's default DATABASE_POOL_SIZE):
//   constant:  answers a constant JSON (GET /me);
//   insert:    one INSERT ... RETURNING per request into a table of the workspace's
//              (POST /insert; on Citus a routed INSERT: scripts/bench/baseline-table.ts);
//   read:      one primary-key SELECT of a lead of the workspace per request (GET /api/v1/leads/:id);
//   same-work: a JSON body parser and the service's own statements for a new lead, its
//              lookup and its write, in a transaction of their own per request, sent
//              straight through pg (POST /api/v1/leads): what one request for a new person
//              costs on its own, with nothing else (no auth, rate limit, validation,
//              normalization beyond the keys, logging) and nothing shared with others.
// The same-work statements are the service's prepared statements from dist/ (their text,
// name and parameter order compiled from the service's own builders), so they cannot drift.
// Run as its own process: `tsx scripts/bench/baseline.ts <mode>` with PORT (and DATABASE_URL
// and WORKSPACE_ID).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import express from 'express';
import pg from 'pg';
import { BASELINE_INSERT, BASELINE_READ, prepareBaselineTable } from './baseline-table.js';

const mode = process.argv[2];
const port = Number(process.env.PORT ?? 0);
const app = express();
const ROOT = path.resolve(import.meta.dirname, '../..');
const workspaceId = Number(process.env.WORKSPACE_ID);
const newPool = () => new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });

if (mode === 'constant') {
  app.get('/me', (_request, response) => {
    response.json({ data: { workspace: { id: 1, name: 'Bench' }, key: { name: 'bench', scopes: ['leads:write'] } } });
  });
} else if (mode === 'insert') {
  const pool = newPool();
  await prepareBaselineTable(pool);
  app.post('/insert', express.json(), async (request, response) => {
    const { rows } = await pool.query<{ id: string; created_at: Date }>(BASELINE_INSERT, [workspaceId, request.body]);
    response.status(201).json({ data: rows[0] });
  });
} else if (mode === 'read') {
  const pool = newPool();
  app.get('/api/v1/leads/:id', async (request, response) => {
    const { rows } = await pool.query(BASELINE_READ, [workspaceId, Number(request.params.id)]);
    if (rows.length === 0) response.status(404).json({ error: 'not_found' });
    else response.json({ data: rows[0] });
  });
} else if (mode === 'same-work') {
  await serveSameWork();
} else {
  process.stderr.write('usage: baseline.ts constant|insert|read|same-work\n');
  process.exit(2);
}

async function serveSameWork(): Promise<void> {
  const load = async <T>(file: string) => (await import(pathToFileURL(path.join(ROOT, 'dist/src', file)).href)) as T;
  // Typed as the sources, so a changed signature fails the type check instead of the run.
  const { INTAKE_LOOKUP } = await load<typeof import('../../src/leads/lookup-repository.js')>('leads/lookup-repository.js');
  const { NEW_LEAD_RECORDS, newLeadsInput } = await load<typeof import('../../src/leads/new-leads-repository.js')>('leads/new-leads-repository.js');
  const pool = newPool();
  app.post('/api/v1/leads', express.json(), async (request, response) => {
    const body = request.body as { name: string; email: string; phone: string; linkedin_url: string; job_title?: string; tags: string[] };
    const email = body.email.toLowerCase();
    const phone = body.phone.replace(/\D/g, '');
    const handle = body.linkedin_url.slice(body.linkedin_url.lastIndexOf('/in/') + 4);
    const keys = [
      { kind: 'email' as const, value: email },
      { kind: 'linkedin' as const, value: handle },
      { kind: 'phone' as const, value: phone.slice(-10) },
    ];
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // Named, as the service's pool sends them (src/db/connect.ts): parsed once per connection.
      const {
        rows: [lookup],
      } = await client.query({
        name: INTAKE_LOOKUP.name,
        text: INTAKE_LOOKUP.text,
        values: INTAKE_LOOKUP.parameters({
          workspaceId,
          tagIds: [],
          tagNames: body.tags.map((tag) => tag.toLowerCase()),
          kinds: keys.map((key) => key.kind),
          values: keys.map((key) => key.value),
          companyId: null,
          domain: email.slice(email.indexOf('@') + 1),
          companyName: null,
        }),
      });
      if (lookup.matches.length > 0) {
        await client.query('COMMIT');
        response.status(200).json({ data: { matched: lookup.matches[0] } });
        return;
      }
      const {
        rows: [lead],
      } = await client.query({
        name: NEW_LEAD_RECORDS.name,
        text: NEW_LEAD_RECORDS.text,
        values: NEW_LEAD_RECORDS.parameters(
          newLeadsInput(workspaceId, [
            {
              values: {
                name: body.name,
                job_title: body.job_title,
                company_id: lookup.companyByDomain,
                emails: [email],
                phones: [phone],
                links: [{ type: 'linkedin', url: body.linkedin_url }],
                locations: [],
                custom_fields: {},
              },
              keys,
              tagIds: (lookup.tags as Array<{ id: number }>).map((tag) => tag.id),
              events: [{ topic: 'lead.created' }],
            },
          ]),
        ),
      });
      await client.query('COMMIT');
      response.status(201).json({ data: lead });
    } finally {
      client.release();
    }
  });
}

const server = app.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));

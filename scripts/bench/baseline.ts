// The two reference servers the benchmark compares against, on the same machine and load:
//   constant: a bare express 5 app answering a constant JSON;
//   insert:   a bare express 5 app doing one INSERT ... RETURNING through pg per request.
// Run as its own process: `tsx scripts/bench/baseline.ts constant|insert` with PORT (and DATABASE_URL).
import express from 'express';
import pg from 'pg';

const mode = process.argv[2];
const port = Number(process.env.PORT ?? 0);
const app = express();

if (mode === 'constant') {
  app.get('/me', (_request, response) => {
    response.json({ data: { workspace: { id: 1, name: 'Bench' }, key: { name: 'bench', scopes: ['leads:write'] } } });
  });
} else if (mode === 'insert') {
  // Same pool size as the service's default DATABASE_POOL_SIZE.
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  await pool.query('CREATE TABLE IF NOT EXISTS bench_baseline (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  app.post('/insert', express.json(), async (request, response) => {
    const { rows } = await pool.query<{ id: string; created_at: Date }>('INSERT INTO bench_baseline (payload) VALUES ($1) RETURNING id, created_at', [request.body]);
    response.status(201).json({ data: rows[0] });
  });
} else {
  process.stderr.write('usage: baseline.ts constant|insert\n');
  process.exit(2);
}

const server = app.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));

import type pg from 'pg';
import { nodeFlagsOf, ROOT, RssSampler, spawnChild, stopChild } from './support.js';
import path from 'node:path';

// The CSV scenario (bench/README.md): a file of `rows` new people uploaded through the
// console's Import CSV, mapped and started as a person does, run by a worker process of its
// own (the bench's service runs with WORKER=off); then Export CSV of the whole workspace.
// Each side's leads/s and the peak RSS of the process doing the work.

export interface CsvScenarioResult {
  rows: number;
  importSeconds: number;
  importLeadsPerSecond: number;
  workerPeakRssBytes: number;
  exportRows: number;
  exportSeconds: number;
  exportLeadsPerSecond: number;
  servicePeakRssBytes: number;
}

const COLUMNS = ['Name', 'Email', 'Phone', 'Company', 'Website', 'Tags'];
const MAPPING = ['name', 'email', 'phone', 'company.name', 'company.website', 'tags'];

/**
 * A trade-show list: 500 companies, each with a website of its own. Company domains are
 * registrable domains (`co7-import.test`, not a subdomain of one shared `bench.test`,
 * which would make every row name the one company with a different name).
 */
function csvOf(rows: number, runId: string): string {
  const lines = [COLUMNS.join(',')];
  for (let index = 0; index < rows; index++) {
    const company = index % 500;
    lines.push(
      `Imported Person ${index},imp-${runId}-${index}@co${company}-import.test,+1 646 ${String(4_000_000 + index).padStart(7, '0')},Company ${company},https://co${company}-import.test,imported`,
    );
  }
  return `${lines.join('\n')}\n`;
}

export async function runCsvScenario(spec: {
  base: string;
  cookie: string;
  databaseUrl: string;
  pool: pg.Pool;
  servicePid: number;
  rows: number;
  runId: string;
  /** Node flags the worker runs with besides its own (`--cpu-prof`: a CPU profile of it too). */
  profileFlags: readonly string[];
}): Promise<CsvScenarioResult> {
  const headers = { cookie: spec.cookie, origin: spec.base };
  const page = await (await fetch(`${spec.base}/console/leads/import`, { headers })).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!csrf) throw new Error('no CSRF token on the Import CSV page');
  const form = new FormData();
  form.append('_csrf', csrf);
  form.append('file', new Blob([csvOf(spec.rows, spec.runId)], { type: 'text/csv' }), 'bench.csv');
  const uploaded = await fetch(`${spec.base}/console/leads/import`, { method: 'POST', headers, body: form, redirect: 'manual' });
  const location = uploaded.headers.get('location');
  if (uploaded.status !== 303 || !location) throw new Error(`the upload answered ${uploaded.status}`);
  const started = await fetch(`${spec.base}${location}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      _csrf: csrf,
      on_duplicate: 'update',
      create_missing_tags: '1',
      action: 'start',
      ...Object.fromEntries(MAPPING.map((field, index) => [`map-${index}`, field])),
    }),
    redirect: 'manual',
  });
  if (started.status !== 303) throw new Error(`Start import answered ${started.status}`);
  const importId = Number(location.split('/').pop());

  const worker = spawnChild([...nodeFlagsOf('worker'), ...spec.profileFlags, path.join(ROOT, 'dist', 'src', 'worker-main.js')], {
    DATABASE_URL: spec.databaseUrl,
    LOG_LEVEL: 'warn',
    OUTBOX_POLL_MS: '100',
  });
  const workerRss = new RssSampler(() => [worker.pid!]).start();
  const importStart = performance.now();
  try {
    for (;;) {
      const { rows } = await spec.pool.query<{ status: string }>('SELECT status FROM lead_imports WHERE id = $1', [importId]);
      if (rows[0]?.status === 'done') break;
      if (rows[0]?.status === 'cancelled') throw new Error('the import was cancelled');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await stopChild(worker);
  }
  const importSeconds = (performance.now() - importStart) / 1000;
  const workerPeakRssBytes = workerRss.stop();

  const serviceRss = new RssSampler(() => [spec.servicePid]).start();
  const exportStart = performance.now();
  const answer = await fetch(`${spec.base}/console/leads/export.csv`, { headers });
  let newlines = 0;
  for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) for (const byte of chunk) if (byte === 10) newlines++;
  const exportSeconds = (performance.now() - exportStart) / 1000;
  const exportRows = newlines - 1;
  return {
    rows: spec.rows,
    importSeconds,
    importLeadsPerSecond: spec.rows / importSeconds,
    workerPeakRssBytes,
    exportRows,
    exportSeconds,
    exportLeadsPerSecond: exportRows / exportSeconds,
    servicePeakRssBytes: serviceRss.stop(),
  };
}

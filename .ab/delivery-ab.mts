// A/B of the bench's delivery scenario alone: `tsx /tmp/delivery-ab.ts <checkout> <events>`.
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import pg from 'pg';
const root = process.argv[2]!;
const events = Number(process.argv[3] ?? 10000);
const { runDeliveryScenario } = await import(path.join(root, 'scripts/bench/delivery.ts'));
const { runCli, adminQuery } = await import(path.join(root, 'scripts/bench/support.ts'));
const { seedLeads } = await import(path.join(root, 'scripts/bench/seed.ts'));
const admin = 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `lead_intake_ab_${Date.now()}`;
const url = `postgres://postgres@127.0.0.1:5432/${name}`;
await adminQuery(admin, `CREATE DATABASE "${name}"`);
try {
  execFileSync(process.execPath, [path.join(root, 'dist/src/migrate-main.js')], { env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' }, stdio: 'ignore' });
  const demo = await runCli(['demo'], { DATABASE_URL: url, LOG_LEVEL: 'warn' });
  await seedLeads(url, demo.workspace.id, 1, events);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => {});
  const r = await runDeliveryScenario({ pool, databaseUrl: url, workspaceId: demo.workspace.id, events, workers: 2, timeoutMs: 180_000 });
  await pool.end();
  console.log(JSON.stringify({ root, delivered: r.delivered, lost: r.lost, duplicates: r.duplicates, perSecond: Math.round(r.deliveriesPerSecond), drain: r.drainSeconds, cpuUs: Math.round(r.workerCpuMicrosecondsPerDelivery) }));
} catch (e) { console.error('FAILED', e); } finally {
  await adminQuery(admin, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {});
}

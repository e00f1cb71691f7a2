import { readFile, realpath } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

// What is running where: the data directory's lock file names its server, and a server
// answering on a port tells its data directory. Together they decide whether a running
// PostgreSQL is this checkout's own.

export const SUPERUSER = { user: 'postgres', password: 'postgres' } as const;

function adminClient(port: number, database = 'postgres'): pg.Client {
  const client = new pg.Client({ host: '127.0.0.1', port, ...SUPERUSER, database, connectionTimeoutMillis: 3000 });
  // A short-lived connection still needs a listener: the server may go away while it is open.
  client.on('error', () => {});
  return client;
}

export async function withAdminClient<T>(port: number, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = adminClient(port);
  try {
    await client.connect();
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

export interface Postmaster {
  pid: number;
  port: number;
  /** `starting`, `ready`, `stopping` or `standby` (PostgreSQL's pidfile.h). */
  status: string;
}

/** The running server recorded in the data directory's postmaster.pid, if its process lives. */
export async function readPostmaster(dataDir: string): Promise<Postmaster | null> {
  const text = await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => null);
  if (!text) return null;
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || !isAlive(pid)) return null;
  return { pid, port, status: (lines[7] ?? '').trim() };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

export type PortHolder = { kind: 'free' } | { kind: 'postgres'; dataDirectory: string | null; detail: string } | { kind: 'other'; detail: string };

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setTimeout(2000, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Who listens on 127.0.0.1:port: nobody, a PostgreSQL server (and its data directory), or another program. */
export async function whoHolds(port: number): Promise<PortHolder> {
  if (!(await accepts(port))) return { kind: 'free' };
  try {
    const dataDirectory = await withAdminClient(port, async (client) => (await client.query<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory);
    return { kind: 'postgres', dataDirectory, detail: `data directory ${dataDirectory}` };
  } catch (error) {
    // A PostgreSQL server answers with a SQLSTATE (wrong password, no such role, still starting).
    const { code, message } = error as { code?: string; message?: string };
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
      return { kind: 'postgres', dataDirectory: null, detail: `it answered: ${message}` };
    }
    return { kind: 'other', detail: message ?? String(error) };
  }
}

/** Two spellings of one directory compare equal (symlinks, trailing slashes). */
export async function sameDirectory(a: string, b: string): Promise<boolean> {
  const canonical = (dir: string) => realpath(dir).catch(() => path.resolve(dir));
  return (await canonical(a)) === (await canonical(b));
}

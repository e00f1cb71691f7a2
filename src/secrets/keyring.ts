import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { PROJECT_ROOT } from '../paths.js';

// Secrets at rest (connector credentials, signing secrets) are AES-256-GCM ciphertext:
// `v2:<key id>:<iv>:<tag>:<ciphertext>` (base64 parts). The key id names the key that sealed
// a value, so after a rotation values sealed with a previous key still open. A v2 value is
// bound to its place (table, column, workspace, row) as associated data: copied to another
// row, column or workspace it no longer opens. `v1` values (no associated data) still open:
// migrations 0005 and 0007 wrote them, 0021 and `secrets reencrypt` seal them again as v2.

export interface SecretKey {
  id: string;
  bytes: Buffer;
}

export interface Keyring {
  /** Seals every new value. */
  current: SecretKey;
  /** Every key that may open a stored value, by id (the current one included). */
  byId: Map<string, SecretKey>;
  /** Where the current key came from, for the log. */
  source: 'SECRETS_KEY' | 'created key file' | 'key file';
}

/** The key file every process of this checkout shares when SECRETS_KEY is not set. */
export const DEFAULT_KEY_FILE = path.join(PROJECT_ROOT, '.data', 'secrets.key');

const KEY_BYTES = 32;
const IV_BYTES = 12;
const UNBOUND = 'v1';
const BOUND = 'v2';

export class SecretKeyError extends Error {}

export const secretKeyId = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex').slice(0, 8);

/** A key as `openssl rand -base64 32` prints it, or null when the text is not one. */
function decodeKey(text: string): Buffer | null {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return null;
  const bytes = Buffer.from(trimmed, 'base64');
  return bytes.length === KEY_BYTES ? bytes : null;
}

export const isSecretKeyText = (text: string) => decodeKey(text) !== null;

function parseKey(text: string, origin: string): SecretKey {
  const bytes = decodeKey(text);
  if (!bytes) throw new SecretKeyError(`${origin} must be 32 random bytes in base64, as \`openssl rand -base64 32\` prints them`);
  return { id: secretKeyId(bytes), bytes };
}

/**
 * Reads the key file, or creates it with a new key. The key is written to a private temporary
 * file that is then hard-linked into place: the link fails when another process got there
 * first, so processes starting at once all end up with the one key that won.
 */
function keyFromFile(file: string): { key: SecretKey; created: boolean } {
  if (fs.existsSync(file)) return { key: parseKey(fs.readFileSync(file, 'utf8'), file), created: false };
  // The directory keeps its usual mode: the embedded PostgreSQL has its place in it too; the file is private.
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  fs.writeFileSync(temporary, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(temporary, file);
    return { key: parseKey(fs.readFileSync(file, 'utf8'), file), created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { key: parseKey(fs.readFileSync(file, 'utf8'), file), created: false };
  } finally {
    fs.rmSync(temporary, { force: true });
  }
}

export interface KeySettings {
  SECRETS_KEY?: string | undefined;
  /** Comma-separated previous keys, still accepted for opening values. */
  SECRETS_KEY_PREVIOUS?: string | undefined;
}

export function resolveKeyring(settings: KeySettings, keyFile = DEFAULT_KEY_FILE): Keyring {
  const fromFile = settings.SECRETS_KEY ? null : keyFromFile(keyFile);
  const current = fromFile ? fromFile.key : parseKey(settings.SECRETS_KEY!, 'SECRETS_KEY');
  const previous = (settings.SECRETS_KEY_PREVIOUS ?? '')
    .split(',')
    .filter((text) => text.trim() !== '')
    .map((text, index) => parseKey(text, `SECRETS_KEY_PREVIOUS (entry ${index + 1})`));
  const byId = new Map([...previous, current].map((key) => [key.id, key]));
  return { current, byId, source: fromFile ? (fromFile.created ? 'created key file' : 'key file') : 'SECRETS_KEY' };
}

/** Where a sealed value lives; a value sealed for one place opens only there. */
export interface SealedPlace {
  table: 'connectors' | 'workflows' | 'deliveries';
  /** The column, or the JSON field, that holds it. */
  column: string;
  workspaceId: number;
  /** The row's stable identity: its id, or a delivery's webhook-id. */
  row: number | string;
}

const associatedData = (place: SealedPlace) => Buffer.from(`${place.table}.${place.column}/${place.workspaceId}/${place.row}`, 'utf8');
const describePlace = (place: SealedPlace) => `${place.table}.${place.column} of row ${place.row} (workspace ${place.workspaceId})`;

function seal(keyring: Keyring, plain: string, place: SealedPlace | null): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyring.current.bytes, iv);
  if (place) cipher.setAAD(associatedData(place));
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [place ? BOUND : UNBOUND, keyring.current.id, iv.toString('base64'), cipher.getAuthTag().toString('base64'), ciphertext.toString('base64')].join(':');
}

/** Seals `plain` for its place (v2). */
export const sealWith = (keyring: Keyring, plain: string, place: SealedPlace): string => seal(keyring, plain, place);

/** The v1 format, bound to no place: only what migrations 0005 and 0007 wrote (and tests of them). */
export const sealUnboundWith = (keyring: Keyring, plain: string): string => seal(keyring, plain, null);

export const isSealed = (stored: string) => stored.startsWith(`${UNBOUND}:`) || stored.startsWith(`${BOUND}:`);

/** Opens a value stored at `place`: v2 only when sealed for that very place, v1 anywhere (the transition). */
export function openWith(keyring: Keyring, stored: string, place: SealedPlace): string {
  const [format, id, iv, tag, ciphertext, ...rest] = stored.split(':');
  if ((format !== UNBOUND && format !== BOUND) || ciphertext === undefined || rest.length > 0) throw new SecretKeyError(`${describePlace(place)} is not in the sealed format`);
  const key = keyring.byId.get(id!);
  if (!key) throw new SecretKeyError(`a stored secret was sealed with key ${id}, which is neither SECRETS_KEY nor in SECRETS_KEY_PREVIOUS`);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(iv!, 'base64'));
    if (format === BOUND) decipher.setAAD(associatedData(place));
    decipher.setAuthTag(Buffer.from(tag!, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretKeyError(`${describePlace(place)} does not open: it was sealed for another row, column or workspace, or altered`);
  }
}

// One keyring per process: every repository that stores a secret seals and opens through it.
let active: Keyring | null = null;

/** The process's keyring, resolved from the environment on first use (tests, migrations run alone). */
export function keyring(): Keyring {
  active ??= resolveKeyring(process.env);
  return active;
}

/**
 * Resolves the keyring at start-up and says in the log where the key came from: a warning
 * when it is the key file. `keyFileReadLevel` lets the CLI, whose stderr stays quiet on
 * success, say it at info level when the file already existed (a new file is always a warning).
 */
export function useSecretsKey(settings: KeySettings, logger: Logger, keyFileReadLevel: 'warn' | 'info' = 'warn'): Keyring {
  active = resolveKeyring(settings);
  const { id } = active.current;
  if (active.source === 'SECRETS_KEY') {
    logger.info({ keyId: id, previousKeys: active.byId.size - 1 }, 'secrets at rest encrypted with SECRETS_KEY');
  } else {
    logger[active.source === 'created key file' ? 'warn' : keyFileReadLevel](
      { keyId: id, keyFile: DEFAULT_KEY_FILE },
      `SECRETS_KEY is not set: secrets at rest are encrypted with the key in ${DEFAULT_KEY_FILE} (${active.source === 'created key file' ? 'created now' : 'read'}); every process of this checkout uses it, processes on other machines need one shared SECRETS_KEY`,
    );
  }
  return active;
}

/**
 * For lists people read, whose secrets are only ever shown masked: a value that does not open
 * reads as empty, so one moved or altered value does not take down every page listing its
 * neighbours. Sending and revealing open strictly and say which value failed.
 */
export const openedOrEmpty =
  (open: (stored: string) => string) =>
  (stored: string): string => {
    try {
      return open(stored);
    } catch (error) {
      if (error instanceof SecretKeyError) return '';
      throw error;
    }
  };

/** Seal and open, with the process's keyring, for one place. */
export const secretsAt = (place: SealedPlace) => ({
  seal: (plain: string) => sealWith(keyring(), plain, place),
  open: (stored: string) => openWith(keyring(), stored, place),
});

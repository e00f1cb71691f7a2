import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../../src/config.js';
import { PROJECT_ROOT } from '../../src/paths.js';
import { openWith, resolveKeyring, sealUnboundWith, sealWith, secretKeyId, type SealedPlace } from '../../src/secrets/keyring.js';

const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-key-'));
afterAll(() => fs.rmSync(directory, { recursive: true, force: true }));
const newKey = () => randomBytes(32).toString('base64');
const place: SealedPlace = { table: 'connectors', column: 'auth', workspaceId: 1, row: 7 };

describe('the key file, without SECRETS_KEY', () => {
  it('is created once with mode 600, and every later process reads the same key', () => {
    const file = path.join(directory, 'checkout', '.data', 'secrets.key');
    const first = resolveKeyring({}, file);
    expect(first.source).toBe('created key file');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64')).toHaveLength(32);

    const second = resolveKeyring({}, file);
    expect(second.source).toBe('key file');
    expect(second.current.id).toBe(first.current.id);
    expect(openWith(second, sealWith(first, 'tok_123', place), place)).toBe('tok_123');
    // No temporary file is left beside it.
    expect(fs.readdirSync(path.dirname(file))).toEqual(['secrets.key']);
  });

  it('is the same key for processes that start at once', async () => {
    const file = path.join(directory, 'race', 'secrets.key');
    // Each process loads the module, then waits for the same moment before it looks for the file.
    const startAt = Date.now() + 3000;
    const script =
      `const { resolveKeyring } = await import(${JSON.stringify(path.join(PROJECT_ROOT, 'src', 'secrets', 'keyring.ts'))});` +
      `Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, ${startAt} - Date.now()));` +
      `process.stdout.write(resolveKeyring({}, ${JSON.stringify(file)}).current.id);`;
    const run = () =>
      new Promise<string>((resolve, reject) => {
        execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: PROJECT_ROOT }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
      });
    const ids = await Promise.all(Array.from({ length: 4 }, run));
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toBe(resolveKeyring({}, file).current.id);
  }, 60_000);

  it('is not used when SECRETS_KEY is set', () => {
    const file = path.join(directory, 'unused', 'secrets.key');
    const keyring = resolveKeyring({ SECRETS_KEY: newKey() }, file);
    expect(keyring.source).toBe('SECRETS_KEY');
    expect(fs.existsSync(file)).toBe(false);
  });
});

describe('sealing', () => {
  it('stores AES-256-GCM ciphertext named by its key id, never the value, and a fresh IV each time', () => {
    const key = newKey();
    const keyring = resolveKeyring({ SECRETS_KEY: key });
    const sealed = sealWith(keyring, 'whsec_secret', place);
    expect(sealed).toMatch(new RegExp(`^v2:${secretKeyId(Buffer.from(key, 'base64'))}:[^:]+:[^:]+:[^:]+$`));
    expect(sealed).not.toContain('whsec_secret');
    expect(sealWith(keyring, 'whsec_secret', place)).not.toBe(sealed);
    expect(openWith(keyring, sealed, place)).toBe('whsec_secret');
  });

  it('binds a value to its table, column, workspace and row: anywhere else it does not open; a v1 value (no place) opens anywhere', () => {
    const keyring = resolveKeyring({ SECRETS_KEY: newKey() });
    const sealed = sealWith(keyring, 'tok_bound', place);
    const elsewhere: SealedPlace[] = [
      { ...place, table: 'workflows' },
      { ...place, column: 'headers' },
      { ...place, workspaceId: 2 },
      { ...place, row: 8 },
    ];
    for (const other of elsewhere) expect(() => openWith(keyring, sealed, other)).toThrow(/does not open: it was sealed for another row, column or workspace/);
    const unbound = sealUnboundWith(keyring, 'tok_v1');
    expect(unbound).toMatch(/^v1:/);
    for (const other of [place, ...elsewhere]) expect(openWith(keyring, unbound, other)).toBe('tok_v1');
  });

  it('opens values sealed with a previous key listed in SECRETS_KEY_PREVIOUS, and refuses unknown keys and tampering', () => {
    const [old, current] = [newKey(), newKey()];
    const sealedBefore = sealWith(resolveKeyring({ SECRETS_KEY: old }), 'tok_old', place);
    expect(openWith(resolveKeyring({ SECRETS_KEY: current, SECRETS_KEY_PREVIOUS: `${newKey()},${old}` }), sealedBefore, place)).toBe('tok_old');
    expect(() => openWith(resolveKeyring({ SECRETS_KEY: current }), sealedBefore, place)).toThrow(/neither SECRETS_KEY nor in SECRETS_KEY_PREVIOUS/);

    const keyring = resolveKeyring({ SECRETS_KEY: current });
    const parts = sealWith(keyring, 'tok_new', place).split(':');
    parts[4] = Buffer.from('tampered').toString('base64');
    expect(() => openWith(keyring, parts.join(':'), place)).toThrow(/altered/);
  });

  it('refuses a SECRETS_KEY that is not 32 bytes in base64 at start-up', () => {
    expect(() => loadConfig({ SECRETS_KEY: 'too-short' })).toThrow(ConfigError);
    expect(() => loadConfig({ SECRETS_KEY: randomBytes(16).toString('base64') })).toThrow(/SECRETS_KEY/);
    expect(() => loadConfig({ SECRETS_KEY: newKey(), SECRETS_KEY_PREVIOUS: `${newKey()},nope` })).toThrow(/SECRETS_KEY_PREVIOUS/);
    expect(loadConfig({ SECRETS_KEY: newKey() }).DELIVERY_RETENTION_DAYS).toBe(30);
  });
});

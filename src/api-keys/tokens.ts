import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// Tokens are `<prefix>_<secret>`: the prefix ("lk" + 10 base36 characters) is public and
// indexed; the secret is 32 random bytes. Only SHA-256 of the whole token is stored: a
// slow password hash buys nothing for 256-bit random secrets and would cost every request.

const PREFIX_PATTERN = /^lk[0-9a-z]{10}$/;
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

export interface NewToken {
  prefix: string;
  token: string;
  hash: Buffer;
}

export function generateToken(): NewToken {
  const prefix = 'lk' + Array.from(randomBytes(10), (byte) => BASE36[byte % 36]).join('');
  const token = `${prefix}_${randomBytes(32).toString('base64url')}`;
  return { prefix, token, hash: hashToken(token) };
}

function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function parseToken(token: string): { prefix: string } | null {
  const separator = token.indexOf('_');
  if (separator < 0) return null;
  const prefix = token.slice(0, separator);
  const secret = token.slice(separator + 1);
  return PREFIX_PATTERN.test(prefix) && SECRET_PATTERN.test(secret) ? { prefix } : null;
}

/**
 * A well-formed prefix as one number: its 10 base36 characters are below 36^10 < 2^53, so the
 * number is exact and two prefixes never share one. Null for anything else (such a prefix can
 * never authenticate: parseToken refuses it).
 */
export function prefixCode(prefix: string): number | null {
  return PREFIX_PATTERN.test(prefix) ? Number.parseInt(prefix.slice(2), 36) : null;
}

export function tokenMatches(token: string, storedHash: Buffer): boolean {
  const hash = hashToken(token);
  return hash.length === storedHash.length && timingSafeEqual(hash, storedHash);
}

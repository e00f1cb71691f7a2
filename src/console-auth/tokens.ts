import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

// The console's secrets: sign-in link and session tokens (256 random bits, base64url), stored
// only as their SHA-256; the CSRF token of a session is derived from its token, so it is bound
// to the session without being stored and means nothing to anyone who lacks the cookie.

export const newToken = (): string => randomBytes(32).toString('base64url');

export const tokenHash = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/** Only the shape a token of newToken() has: anything else is refused before any query. */
export const looksLikeToken = (value: unknown): value is string => typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value);

export const csrfTokenFor = (sessionToken: string): string => createHmac('sha256', sessionToken).update('console-csrf').digest('base64url');

/** Constant-time comparison of two strings (false when their lengths differ). */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

import { setTimeout as sleep } from 'node:timers/promises';
import ipaddr from 'ipaddr.js';
import type { Db } from '../db/connect.js';
import { releaseSignInAttempts, reserveSignInAttempt } from './repository.js';

// The sign-in throttle: wrong passwords counted per email and per client address, each
// attempt reserved before its password is checked.

/**
 * Wrong passwords within the window: past `slowAfter` every attempt waits first, past
 * `refuseAfter` attempts are refused unchecked until the window has passed, per email (known
 * or not: the answer never tells) and per address (an office behind one address gets more).
 */
export const THROTTLE = {
  windowSeconds: 15 * 60,
  delayMs: 1000,
  email: { slowAfter: 5, refuseAfter: 10 },
  address: { slowAfter: 20, refuseAfter: 50 },
};
export const SIGN_IN_REFUSED = 'The email or password is wrong.';
export const SIGN_IN_THROTTLED = `Too many failed sign-ins. Try again in ${THROTTLE.windowSeconds / 60} minutes.`;

export type ThrottleSubject = { key: string; limits: { slowAfter: number; refuseAfter: number } };
export const byEmail = (email: string): ThrottleSubject => ({ key: `email:${email}`, limits: THROTTLE.email });
export const byAddress = (address: string): ThrottleSubject => ({ key: `address:${networkOf(address)}`, limits: THROTTLE.address });

/**
 * The address a client is counted by: an IPv4 address itself (an IPv4-mapped IPv6 address as
 * IPv4), an IPv6 address by its /64, which one client holds whole and can rotate within.
 */
function networkOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const network = ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/64`);
  return `${network.toString()}/64`;
}

/**
 * The throttle, once for every password check: reserves the attempt (null when refused) and,
 * past `slowAfter`, waits before the check. The reservation counts as a failure unless released.
 */
async function passThrottle(db: Db, subjects: readonly ThrottleSubject[]): Promise<number[] | null> {
  const reservation = await reserveSignInAttempt(
    db,
    subjects.map((subject) => ({ key: subject.key, refuseAfter: subject.limits.refuseAfter })),
    THROTTLE.windowSeconds,
  );
  if (!reservation) return null;
  if (subjects.some((subject) => (reservation.earlier.get(subject.key) ?? 0) >= subject.limits.slowAfter)) await sleep(THROTTLE.delayMs);
  return reservation.ids;
}

/**
 * Runs a password check under the throttle: its reservation stays as a failure only when the
 * check says so (a wrong password); an answer without a check (an error, a full queue) releases it.
 */
export async function throttledCheck<T>(db: Db, subjects: readonly ThrottleSubject[], check: () => Promise<{ failed: boolean; result: T }>): Promise<T | null> {
  const reserved = await passThrottle(db, subjects);
  if (reserved === null) return null;
  let failed = false;
  try {
    const outcome = await check();
    failed = outcome.failed;
    return outcome.result;
  } finally {
    if (!failed) await releaseSignInAttempts(db, reserved);
  }
}

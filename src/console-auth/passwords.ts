import { hash, verify } from '@node-rs/argon2';
import { Refused } from '../refused.js';

// argon2id with OWASP's first recommended setting (19 MiB, 2 passes, 1 lane). Each hash holds
// its memory outside the JS heap while it runs, so at most a few run at once: a burst of
// sign-ins queues instead of taking hundreds of MiB.
// The package's Algorithm is a const enum (not importable under verbatimModuleSyntax): Argon2id is 2.
const ARGON2ID = 2;
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
const MAX_CONCURRENT_HASHES = 2;
/** Checks waiting their turn; one more is refused (503) rather than queued without end. */
export const MAX_WAITING_HASHES = 32;
export const HASHES_BUSY = 'Too many passwords are being checked right now. Try again in a few seconds.';

export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1024;

let running = 0;
const waiting: Array<() => void> = [];

async function bounded<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT_HASHES) {
    if (waiting.length >= MAX_WAITING_HASHES) throw new Refused('busy', HASHES_BUSY);
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  running += 1;
  try {
    return await work();
  } finally {
    running -= 1;
    waiting.shift()?.();
  }
}

/** The password's rules, with the refusal the CLI and the console both show. */
export function checkPassword(password: string): string {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH) {
    throw new Refused('invalid_argument', `The password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long.`);
  }
  return password;
}

export const hashPassword = (password: string): Promise<string> => bounded(() => hash(password, OPTIONS));

// Verified when no user has the email, so an unknown email takes as long as a wrong password.
let decoy: Promise<string> | undefined;

export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  const against = stored ?? (await (decoy ??= hashPassword('no user has this password')));
  const matches = await bounded(() => verify(against, password).catch(() => false));
  return stored !== null && matches;
}

import { booleanFlag } from './config.js';
import { Refused } from './refused.js';

// Rules for values an operator types, shared by both edges that take them (the CLI's flags,
// the console's forms), so both accept and refuse the same input with the same words; each
// names the flag or field it reads. A feature's own rules live with it (`src/*/input.ts`).

export const invalidInput = (message: string) => new Refused('invalid_argument', message);

export function positiveId(value: string, flag: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw invalidInput(`${flag} must be a positive integer id, got "${value}".`);
  }
  return Number(value);
}

/** An integer flag within bounds. */
export function boundedInteger(value: string, flag: string, bounds: { min: number; max: number }): number {
  if (!/^\d+$/.test(value) || Number(value) < bounds.min || Number(value) > bounds.max) {
    throw invalidInput(`${flag} must be an integer from ${bounds.min} to ${bounds.max}, got "${value}".`);
  }
  return Number(value);
}

/** An ISO-8601 date or timestamp (as JavaScript reads it: a time without a zone is local time), as a UTC ISO string. */
export function parseTimestamp(value: string, flag: string): string {
  const time = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time)) throw invalidInput(`${flag} must be an ISO-8601 timestamp, got "${value}".`);
  return new Date(time).toISOString();
}

export function nonEmpty(value: string, flag: string, maxLength = 255): string {
  const trimmed = value.trim();
  if (trimmed.length === 0) throw invalidInput(`${flag} must not be empty.`);
  if (trimmed.length > maxLength) throw invalidInput(`${flag} must be at most ${maxLength} characters.`);
  return trimmed;
}

/** The same words as the boolean environment variables (true/false, on/off, yes/no, 1/0). */
export function parseBoolean(value: string, flag: string): boolean {
  const parsed = booleanFlag.safeParse(value);
  if (!parsed.success) throw invalidInput(`${flag} must be true or false, got "${value}".`);
  return parsed.data;
}

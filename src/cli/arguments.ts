import { booleanFlag } from '../config.js';
import type { BodyFormat, DeliveryBranch, KeyValue, WebhookMethod } from '../db/schema.js';
import { checkUrlShape, RefusedDestination } from '../deliveries/network-guard.js';
import { parseLooseUrl } from '../normalize.js';
import { Refused } from '../refused.js';

// Arguments of the admin CLI, parsed and refused (invalid_argument) before anything runs.

const invalid = (message: string) => new Refused('invalid_argument', message);

export function positiveId(value: string, flag: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw invalid(`${flag} must be a positive integer id, got "${value}".`);
  }
  return Number(value);
}

/** An integer flag within bounds. */
export function boundedInteger(value: string, flag: string, bounds: { min: number; max: number }): number {
  if (!/^\d+$/.test(value) || Number(value) < bounds.min || Number(value) > bounds.max) {
    throw invalid(`${flag} must be an integer from ${bounds.min} to ${bounds.max}, got "${value}".`);
  }
  return Number(value);
}

const MAX_PER_SECOND = { min: 0.01, max: 1000 };

/**
 * `--max-per-second`: an endpoint's cap, deliveries per second from 0.01 (one every 100 s) to
 * 1000, decimals allowed; `off` removes one (null) where `allowOff` says removing makes sense.
 */
export function parseMaxPerSecond(value: string, flag: string, options: { allowOff: boolean }): number | null {
  if (options.allowOff && value.trim().toLowerCase() === 'off') return null;
  const rate = Number(value);
  if (!/^\s*\d+(\.\d+)?\s*$/.test(value) || rate < MAX_PER_SECOND.min || rate > MAX_PER_SECOND.max) {
    throw invalid(`${flag} must be a number of deliveries per second from ${MAX_PER_SECOND.min} to ${MAX_PER_SECOND.max}${options.allowOff ? ', or off' : ''}, got "${value}".`);
  }
  return rate;
}

/** An ISO-8601 date or timestamp (as JavaScript reads it: a time without a zone is local time), as a UTC ISO string. */
export function parseTimestamp(value: string, flag: string): string {
  const time = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time)) throw invalid(`${flag} must be an ISO-8601 timestamp, got "${value}".`);
  return new Date(time).toISOString();
}

/** `--since` and an optional `--until` (undefined: now), as UTC ISO strings; refused when --until is before --since. */
export function parseTimeWindow(since: string, until: string | undefined): { since: string; until?: string } {
  const window = { since: parseTimestamp(since, '--since'), until: until === undefined ? undefined : parseTimestamp(until, '--until') };
  if (window.until !== undefined && window.until < window.since) throw invalid(`--until (${window.until}) must not be before --since (${window.since}).`);
  return window;
}

/** The one flag given among alternatives (`--a A | --b B`): refused when none or several are. */
export function exactlyOne<K extends string>(options: Partial<Record<NoInfer<K>, string>>, flags: Record<K, string>): [K, string] {
  const given = (Object.keys(flags) as K[]).filter((key) => options[key] !== undefined);
  if (given.length !== 1)
    throw invalid(`Give exactly one of ${Object.values<string>(flags).join(', ')}${given.length ? `, not ${given.map((key) => flags[key]).join(' and ')}` : ''}.`);
  return [given[0]!, options[given[0]!]!];
}

const BRANCHES: DeliveryBranch[] = ['pending', 'Delivered', 'Failed'];

export function parseBranch(value: string): DeliveryBranch {
  if (!BRANCHES.includes(value as DeliveryBranch)) throw invalid(`--branch must be one of ${BRANCHES.join(', ')}, got "${value}".`);
  return value as DeliveryBranch;
}

export function nonEmpty(value: string, flag: string, maxLength = 255): string {
  const trimmed = value.trim();
  if (trimmed.length === 0) throw invalid(`${flag} must not be empty.`);
  if (trimmed.length > maxLength) throw invalid(`${flag} must be at most ${maxLength} characters.`);
  return trimmed;
}

/** The same words as the boolean environment variables (true/false, on/off, yes/no, 1/0). */
export function parseBoolean(value: string, flag: string): boolean {
  const parsed = booleanFlag.safeParse(value);
  if (!parsed.success) throw invalid(`${flag} must be true or false, got "${value}".`);
  return parsed.data;
}

/** A website as intake reads one (`acme.com` is `https://acme.com/`), http or https only. */
export function parseWebsite(value: string, flag: string): string {
  const url = parseLooseUrl(value);
  if (!url) throw invalid(`${flag} must be a URL, got "${value}".`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`${flag} must be an http or https URL.`);
  return url.toString();
}

/** A webhook URL as the network rules accept its shape (addresses are checked at every delivery). */
export function parseWebhookUrl(value: string, flag: string): string {
  try {
    return checkUrlShape(value).toString();
  } catch (error) {
    if (error instanceof RefusedDestination) throw invalid(`${flag}: ${error.message}`);
    throw error;
  }
}

const METHODS: WebhookMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function parseMethod(value: string | undefined): WebhookMethod {
  const method = (value ?? 'POST').toUpperCase();
  if (!METHODS.includes(method as WebhookMethod)) throw invalid(`--method must be one of ${METHODS.join(', ')}, got "${value}".`);
  return method as WebhookMethod;
}

export function parseFormat(value: string | undefined): BodyFormat {
  const format = (value ?? 'json').toLowerCase();
  if (format !== 'json' && format !== 'form') throw invalid(`--format must be json or form, got "${value}".`);
  return format;
}

/** `key=value` pairs; the value may contain `=`; an empty value is allowed, an empty key is not. Past `cap`, rows are dropped. */
export function parsePairs(values: string[], flag: string, cap: number): KeyValue[] {
  return values.slice(0, cap).map((pair) => {
    const at = pair.indexOf('=');
    const key = at < 0 ? '' : pair.slice(0, at).trim();
    if (at < 0 || key === '') throw invalid(`${flag} takes key=value, got "${pair}".`);
    return { key, value: pair.slice(at + 1) };
  });
}

/** For repeatable options: every value in the order given. */
export const collect = (value: string, previous: string[]) => [...previous, value];

import type { BodyFormat, KeyValue, WebhookMethod } from '../db/schema.js';
import { checkUrlShape, RefusedDestination } from '../deliveries/network-guard.js';
import { invalidInput } from '../input.js';

// A webhook's settings as an operator types them, for a connector and for a workflow's Custom
// URL block alike: its URL, method, body format, key=value rows and the endpoint's cap.

const MAX_PER_SECOND = { min: 0.01, max: 1000 };

/**
 * `--max-per-second`: an endpoint's cap, deliveries per second from 0.01 (one every 100 s) to
 * 1000, decimals allowed; `off` removes one (null) where `allowOff` says removing makes sense.
 */
export function parseMaxPerSecond(value: string, flag: string, options: { allowOff: boolean }): number | null {
  if (options.allowOff && value.trim().toLowerCase() === 'off') return null;
  const rate = Number(value);
  if (!/^\s*\d+(\.\d+)?\s*$/.test(value) || rate < MAX_PER_SECOND.min || rate > MAX_PER_SECOND.max) {
    throw invalidInput(
      `${flag} must be a number of deliveries per second from ${MAX_PER_SECOND.min} to ${MAX_PER_SECOND.max}${options.allowOff ? ', or off' : ''}, got "${value}".`,
    );
  }
  return rate;
}

/** A webhook URL as the network rules accept its shape (addresses are checked at every delivery). */
export function parseWebhookUrl(value: string, flag: string): string {
  try {
    return checkUrlShape(value).toString();
  } catch (error) {
    if (error instanceof RefusedDestination) throw invalidInput(`${flag}: ${error.message}`);
    throw error;
  }
}

const METHODS: WebhookMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function parseMethod(value: string | undefined): WebhookMethod {
  const method = (value ?? 'POST').toUpperCase();
  if (!METHODS.includes(method as WebhookMethod)) throw invalidInput(`--method must be one of ${METHODS.join(', ')}, got "${value}".`);
  return method as WebhookMethod;
}

export function parseFormat(value: string | undefined): BodyFormat {
  const format = (value ?? 'json').toLowerCase();
  if (format !== 'json' && format !== 'form') throw invalidInput(`--format must be json or form, got "${value}".`);
  return format;
}

/** `key=value` pairs; the value may contain `=`; an empty value is allowed, an empty key is not. Past `cap`, rows are dropped. */
export function parsePairs(values: string[], flag: string, cap: number): KeyValue[] {
  return values.slice(0, cap).map((pair) => {
    const at = pair.indexOf('=');
    const key = at < 0 ? '' : pair.slice(0, at).trim();
    if (at < 0 || key === '') throw invalidInput(`${flag} takes key=value, got "${pair}".`);
    return { key, value: pair.slice(at + 1) };
  });
}

import type { HeaderRow, KeyValue, WorkflowBlock } from '../db/schema.js';
import { isCredentialName } from '../secrets/credential-headers.js';

// What an operator is shown of credentials: never the value, at most its last four
// characters (enough to tell two tokens apart, too little to use one).

const MIN_LENGTH_SHOWING_TAIL = 12;

export const maskSecret = (secret: string) => (secret.length < MIN_LENGTH_SHOWING_TAIL ? '****' : `****${secret.slice(-4)}`);

/** Header rows with credential values masked, in their order. */
export function maskHeaderRows(rows: readonly HeaderRow[], alsoSecret: readonly string[] = []): HeaderRow[] {
  return rows.map(({ name, value }) => ({ name, value: isCredentialName(name, alsoSecret) ? maskSecret(value) : value }));
}

/** Configured key=value headers (connectors, Custom URL blocks) with credential values masked. */
export function maskKeyValues(rows: readonly KeyValue[]): KeyValue[] {
  return rows.map(({ key, value }) => ({ key, value: isCredentialName(key) ? maskSecret(value) : value }));
}

/** The URL with credential-looking query parameters masked; unchanged (byte for byte) when there are none. */
export function maskUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const params = [...parsed.searchParams];
  if (!params.some(([name]) => isCredentialName(name))) return url;
  parsed.search = new URLSearchParams(params.map(([name, value]): [string, string] => [name, isCredentialName(name) ? maskSecret(value) : value])).toString();
  return parsed.toString();
}

/**
 * What a member (who reads but cannot change) is shown of an endpoint's URL: its origin only.
 * A path or query may carry a token whatever its name (`/hooks/<secret>`), which masking by
 * name cannot tell from a plain path.
 */
export function urlForReader(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '****';
  }
  return parsed.pathname === '/' && parsed.search === '' ? parsed.origin : `${parsed.origin}/…`;
}

/** The URL as the signed-in person may see it: masked for an admin, its origin for a member. */
export const urlShownTo = (url: string, canChange: boolean): string => (canChange ? maskUrl(url) : urlForReader(url));

/**
 * An endpoint's settings as a member is shown them: the URL's origin, and every constant field
 * and header value masked, whatever its name (masking by name alone lets `?sig=` or a field
 * named `crm_ref` through).
 */
export function shownToReader<T extends { url: string; headers: readonly KeyValue[]; fields: readonly KeyValue[] }>(endpoint: T): T {
  return { ...endpoint, url: urlForReader(endpoint.url), headers: maskAllValues(endpoint.headers), fields: maskAllValues(endpoint.fields) };
}

/** A workflow's block as a member is shown it: a Custom URL as shownToReader, any block's fields masked. */
export const blockShownToReader = (block: WorkflowBlock): WorkflowBlock => (block.endpoint === 'url' ? shownToReader(block) : { ...block, fields: maskAllValues(block.fields) });

const maskAllValues = (rows: readonly KeyValue[]): KeyValue[] => rows.map(({ key, value }) => ({ key, value: maskSecret(value) }));

/**
 * A request body as a member is shown it: the values under `keys` (the endpoint's constant and
 * block fields) masked; the rest, the lead's own data and the envelope, as sent. JSON or
 * form-encoded, as `contentType` says; any other body is masked whole.
 */
export function bodyShownToReader(body: string | null, contentType: string | undefined, keys: ReadonlySet<string>): string | null {
  if (body === null || keys.size === 0) return body;
  if (contentType?.startsWith('application/x-www-form-urlencoded')) {
    const params = [...new URLSearchParams(body)].map(([key, value]): [string, string] => [key, keys.has(key) ? maskSecret(value) : value]);
    return new URLSearchParams(params).toString();
  }
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return maskSecret(body);
    return JSON.stringify(
      Object.fromEntries(Object.entries(parsed).map(([key, value]) => [key, keys.has(key) ? maskSecret(typeof value === 'string' ? value : JSON.stringify(value)) : value])),
    );
  } catch {
    return maskSecret(body);
  }
}

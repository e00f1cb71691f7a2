import { createHash } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';

/** The route and the whole body (dry_run included), key order and whitespace ignored. */
export function fingerprintRequest(route: string, body: unknown): string {
  return createHash('sha256')
    .update(route)
    .update('\n')
    .update(stringify(body) ?? '')
    .digest('hex');
}

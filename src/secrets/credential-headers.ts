import { secretsAt } from './keyring.js';

// Headers an operator types (a connector's constant headers, a Custom URL block's headers)
// carry credentials too when their name says so: Authorization, X-Api-Key, X-Auth-Token...
// the names whose values are also masked when shown (src/deliveries/masking.ts). Their values
// are sealed like the connector's auth in the connector, the workflow and every delivery row,
// and opened in memory: for showing masked, and at send time.

/**
 * Names that carry credentials by convention: Authorization, X-Api-Key, X-Auth-Token, a password,
 * a cookie... As a pattern that PostgreSQL's `~*` reads the same way, for statements that find
 * such headers in stored rows.
 */
export const CREDENTIAL_NAME_PATTERN = 'auth|token|secret|key|passw|cookie|credential|signature|session';
const CREDENTIAL_NAME = new RegExp(CREDENTIAL_NAME_PATTERN, 'i');

/** True for a header or parameter name that looks like it carries a credential, or is one of `alsoSecret` (any case). */
export function isCredentialName(name: string, alsoSecret: readonly string[] = []): boolean {
  return CREDENTIAL_NAME.test(name) || alsoSecret.some((secret) => secret.toLowerCase() === name.toLowerCase());
}

type Transform = (value: string) => string;

// The shapes are the stored ones (src/db/outbound-schema.ts), named here by their fields only:
// the database's migrations seal with these functions, so this module imports nothing of it.
interface KeyValue {
  key: string;
  value: string;
}
interface HeaderRow {
  name: string;
  value: string;
}

export const mapCredentialValues = (rows: readonly KeyValue[], transform: Transform): KeyValue[] =>
  rows.map(({ key, value }) => ({ key, value: isCredentialName(key) ? transform(value) : value }));

export const mapCredentialHeaders = (rows: readonly HeaderRow[], transform: Transform): HeaderRow[] =>
  rows.map(({ name, value }) => ({ name, value: isCredentialName(name) ? transform(value) : value }));

/** A Custom URL block with its credential headers transformed; a connector block has none. */
export const mapBlockCredentials = <Block extends { endpoint: string }>(block: Block, transform: Transform): Block =>
  block.endpoint === 'url' && 'headers' in block ? { ...block, headers: mapCredentialValues(block.headers as KeyValue[], transform) } : block;

/**
 * The credential headers of a delivery row are sealed for that delivery: its workspace and its
 * webhook-id (`message_id`, unique in the workspace and made when the row is composed, before
 * the database gives it an id). A replay or a recovery keeps the row, and so its webhook-id.
 */
export const deliveryHeaderSecrets = (row: { workspace_id: number; message_id: string }) =>
  secretsAt({ table: 'deliveries', column: 'headers', workspaceId: row.workspace_id, row: row.message_id });

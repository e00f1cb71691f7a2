import type { ConnectorRow, HeaderRow } from '../db/schema.js';
import { authHeaders } from './headers.js';

// What a delivery row never holds: the connector's auth header and the signing secrets. The
// sender gets them from the connector, or the Custom URL block's workflow, at send time
// (src/worker/deliveries/load-credentials.ts, or the connector at hand for Send test and Push to CRM), so a
// rotated secret or a changed credential applies to retries too.

export interface Credentials {
  /** Added over the row's headers (auth wins over a constant header of the same name). */
  headers: HeaderRow[];
  /** Every secret the message is signed with: one, or two during a rotation's overlap. */
  signingSecrets: string[];
}

/** A connector's auth header and the secrets it signs with now: its own, and the previous one while the overlap lasts. */
export function connectorCredentials(connector: ConnectorRow, now = new Date()): Credentials {
  const overlapping = connector.previous_signing_secret !== null && connector.previous_secret_expires_at !== null && new Date(connector.previous_secret_expires_at) > now;
  return {
    headers: authHeaders(connector.auth),
    signingSecrets: overlapping ? [connector.signing_secret, connector.previous_signing_secret!] : [connector.signing_secret],
  };
}

/** A Custom URL block: no auth, the workflow's signing secret. */
export const workflowCredentials = (signingSecret: string): Credentials => ({ headers: [], signingSecrets: [signingSecret] });

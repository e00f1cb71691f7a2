import { createHmac } from 'node:crypto';
import { keyring, type SecretKey } from './keyring.js';

// The keyed digest a suppression keeps of a contact detail (an email, a phone's match key, a
// LinkedIn handle: the normalized match keys of lead_identities), never the detail itself. The
// HMAC key is derived from the secrets key (SECRETS_KEY, or the key file), so no other key is
// needed; a detail is looked for under the current key and every SECRETS_KEY_PREVIOUS, so a
// rotation keeps the suppressions made before it as long as the previous key is listed. A
// detail's kind (`email`, `phone`, `linkedin`) is named by its value alone: secrets/ sits below db/.

const DERIVATION_LABEL = 'lead-intake contact suppression v1';

const derivedKeys = new WeakMap<SecretKey, Buffer>();

function suppressionKey(key: SecretKey): Buffer {
  let derived = derivedKeys.get(key);
  if (!derived) derivedKeys.set(key, (derived = createHmac('sha256', key.bytes).update(DERIVATION_LABEL).digest()));
  return derived;
}

const digestUnder = (key: SecretKey, kind: string, value: string) => createHmac('sha256', suppressionKey(key)).update(`${kind}\u0000${value}`).digest();

/** The digest stored for a contact detail: under the current secrets key. */
export const contactDigest = (kind: string, value: string): Buffer => digestUnder(keyring().current, kind, value);

/** Every digest a stored suppression of the detail may have: under the current key and each previous one. */
export const contactDigestsToMatch = (kind: string, value: string): Buffer[] => [...keyring().byId.values()].map((key) => digestUnder(key, kind, value));

// The credential of a connector's auth is the one field sealed inside the stored JSON; the
// type, username and header name stay readable (they are shown to operators as they are).
// The auth is named by its `type` alone (its shapes are src/db/outbound-schema.ts's
// ConnectorAuth): the database's migrations seal with this, so it imports nothing of it.

/** The field holding the credential, by the auth's type. */
const CREDENTIAL_FIELD: Record<string, string | undefined> = { bearer: 'token', basic: 'password', header: 'value' };

export function mapAuthSecret<Auth extends { type: string }>(auth: Auth, transform: (value: string) => string): Auth {
  const field = CREDENTIAL_FIELD[auth.type];
  const credential = field === undefined ? undefined : (auth as Record<string, unknown>)[field];
  return typeof credential === 'string' ? { ...auth, [field!]: transform(credential) } : auth;
}

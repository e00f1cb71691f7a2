import type { ConnectorAuth } from '../db/schema.js';

// The credential of a connector's auth is the one field sealed inside the stored JSON; the
// type, username and header name stay readable (they are shown to operators as they are).

export function mapAuthSecret(auth: ConnectorAuth, transform: (value: string) => string): ConnectorAuth {
  switch (auth.type) {
    case 'bearer':
      return { ...auth, token: transform(auth.token) };
    case 'basic':
      return { ...auth, password: transform(auth.password) };
    case 'header':
      return { ...auth, value: transform(auth.value) };
    default:
      return auth;
  }
}

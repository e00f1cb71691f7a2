import type { Request, RequestHandler } from 'express';
import type { Scope } from '../../../generated/api.js';
import { findKeyForAuthentication, touchLastUsed, type KeyForAuthentication } from '../../api-keys/repository.js';
import { keyIsOrphaned } from '../../api-keys/service.js';
import { parseToken, tokenMatches } from '../../api-keys/tokens.js';
import type { ApiKeyCache } from '../../api-keys/key-cache.js';
import type { PrefixView } from '../../api-keys/prefix-view.js';
import type { Db } from '../../db/connect.js';
import { ApiError } from '../errors.js';

export interface AuthContext {
  apiKeyId: number;
  workspaceId: number;
  workspaceName: string;
  /** The workspace suppressed someone: its writes are screened (src/suppression/). */
  hasSuppressionList: boolean;
  name: string;
  prefix: string;
  scopes: Scope[];
  expiresAt: string | null;
  lastUsedAt: string | null;
}

declare module 'express-serve-static-core' {
  interface Request {
    auth?: AuthContext;
    /** The parsed body before validation added defaults (kept only when an Idempotency-Key is sent). */
    bodyAsSent?: unknown;
  }
}

export function authOf(req: Pick<Request, 'auth'>): AuthContext {
  if (!req.auth) throw new Error('route is missing the authenticate middleware');
  return req.auth;
}

const LAST_USED_WRITE_INTERVAL_SECONDS = 60;
const ORPHANED_KEY = 'The API key is orphaned: the user who created it no longer exists or no longer holds the update-companies permission. Create a new key.';

export function authenticate(db: Db, cache: ApiKeyCache<KeyForAuthentication>, prefixes: PrefixView, documentationUrl: string): RequestHandler {
  const reject = (message: string) => new ApiError(401, { error: 'invalid_api_key', message, documentation_url: documentationUrl });
  // Per process, so a busy key costs one UPDATE a minute instead of one per request.
  const lastWrite = new Map<number, number>();

  return async (req, _res, next) => {
    const header = req.get('authorization');
    if (!header) throw reject('No API key was sent. Send it as "Authorization: Bearer <API_KEY>".');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw reject('The Authorization header must have the form "Bearer <API_KEY>".');
    const token = match[1]!;
    const parsed = parseToken(token);
    if (!parsed) throw reject('The API key is malformed.');

    let key = cache.get(parsed.prefix);
    if (!key) {
      // A made-up key costs no query (an unauthenticated flood never reaches the database).
      if (!prefixes.mayExist(parsed.prefix)) throw reject('The API key is invalid.');
      const version = cache.version;
      key = await findKeyForAuthentication(db, parsed.prefix);
      if (key) cache.set(parsed.prefix, key, version);
    }
    if (!key || !tokenMatches(token, key.token_hash)) throw reject('The API key is invalid.');
    if (key.revoked_at !== null) throw reject('The API key has been revoked.');
    if (key.expires_at !== null && Date.parse(key.expires_at) <= Date.now()) throw reject('The API key has expired.');
    if (keyIsOrphaned(key)) throw reject(ORPHANED_KEY);

    const now = Date.now();
    if ((lastWrite.get(key.id) ?? 0) < now - LAST_USED_WRITE_INTERVAL_SECONDS * 1000) {
      lastWrite.set(key.id, now);
      const touched = await touchLastUsed(db, key.id, LAST_USED_WRITE_INTERVAL_SECONDS);
      if (touched) {
        key = { ...key, last_used_at: touched.last_used_at };
        cache.update(parsed.prefix, (cached) => ({ ...cached, last_used_at: touched.last_used_at }));
      }
    }

    req.auth = {
      apiKeyId: key.id,
      workspaceId: key.workspace_id,
      workspaceName: key.workspace_name,
      hasSuppressionList: key.has_suppression_list,
      name: key.name,
      prefix: key.prefix,
      scopes: key.scopes as Scope[],
      expiresAt: key.expires_at,
      lastUsedAt: key.last_used_at,
    };
    next();
  };
}

export function requireScope(scope: Scope): RequestHandler {
  return (req, _res, next) => {
    const auth = authOf(req);
    if (!auth.scopes.includes(scope)) {
      throw new ApiError(403, {
        error: 'insufficient_scope',
        message: `This API key lacks the "${scope}" scope required by this route.`,
        required_scope: scope,
        granted_scopes: auth.scopes,
      });
    }
    next();
  };
}

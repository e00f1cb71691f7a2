import type { Router } from 'express';
import { scopeValues } from '../../../generated/api.js';
import { listKeys } from '../../api-keys/repository.js';
import { createApiKey, keyIsOrphaned, revokeApiKey } from '../../api-keys/service.js';
import { parseScopes } from '../../api-keys/input.js';
import { nonEmpty, parseTimestamp } from '../../input.js';
import type { AppContext } from '../../context.js';
import { Refused } from '../../refused.js';
import type { Role } from '../../users/repository.js';
import { listWorkspaceMembers } from '../../users/service.js';
import { noticeOf } from '../notices.js';
import { actorOf, signedIn } from '../session.js';
import { render } from '../views.js';
import { list, pathId, text } from './form.js';

type KeyRow = Awaited<ReturnType<typeof listKeys>>[number];

/** Valid, revoked, expired or orphaned (its creator deleted or demoted): what authentication would say of it. */
function condition(key: KeyRow, creatorRole: Role | null, now: number): 'valid' | 'revoked' | 'expired' | 'orphaned' {
  if (key.revoked_at !== null) return 'revoked';
  if (key.expires_at !== null && Date.parse(key.expires_at) <= now) return 'expired';
  if (keyIsOrphaned({ user_id: key.user_id, creator_role: creatorRole })) return 'orphaned';
  return 'valid';
}

export function addKeyRoutes(router: Router, ctx: AppContext): void {
  router.get('/api-keys', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const [keys, members] = await Promise.all([listKeys(ctx.db, workspaceId), listWorkspaceMembers(ctx.db, workspaceId)]);
    const roles = new Map(members.map((member) => [member.id, member.role]));
    const now = Date.now();
    render(res, 'keys', {
      title: 'API keys',
      page: 'keys',
      notice: noticeOf(req),
      scopes: scopeValues,
      keys: keys.map((key) => ({ ...key, condition: condition(key, key.user_id === null ? null : (roles.get(key.user_id) ?? null), now) })).reverse(),
    });
  });

  router.post('/api-keys', async (req, res) => {
    const { user } = signedIn(res);
    const expiresAt = text(req.body, 'expires_at').trim();
    const created = await createApiKey(ctx.db, actorOf(req, res), {
      workspaceId: user.workspaceId,
      userId: user.userId,
      name: nonEmpty(text(req.body, 'name'), 'Name'),
      scopes: parseScopes(list(req.body, 'scopes')),
      // datetime-local sends no zone: the form says the time is UTC.
      expiresAt: expiresAt === '' ? null : parseTimestamp(/[zZ]|[+-]\d\d:?\d\d$/.test(expiresAt) ? expiresAt : `${expiresAt}Z`, 'Expires at'),
    });
    // Usable at once from this process, whose prefix view would otherwise refuse it until the notification is back.
    ctx.apiKeyCache.changedHere(created.prefix);
    // The token is in this answer only (no redirect, no flash, Cache-Control: no-store): shown once.
    render(res, 'key-created', { title: 'Key created', page: 'keys', key: created }, 201);
  });

  router.get('/api-keys/:id/revoke', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const id = pathId(req.params.id);
    const key = (await listKeys(ctx.db, workspaceId)).find((row) => row.id === id);
    if (!key) throw new Refused('not_found', `API key ${id} does not exist.`);
    render(res, 'key-revoke', { title: 'Revoke key', page: 'keys', key });
  });

  router.post('/api-keys/:id/revoke', async (req, res) => {
    const revoked = await revokeApiKey(ctx.db, actorOf(req, res), pathId(req.params.id), signedIn(res).user.workspaceId);
    // Refused at once by this process, not only once the notification is back.
    ctx.apiKeyCache.changedHere(revoked.prefix);
    res.redirect(303, '/console/api-keys?notice=key-revoked');
  });
}

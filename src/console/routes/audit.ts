import type { Router } from 'express';
import { listAudit } from '../../audit/service.js';
import type { AppContext } from '../../context.js';
import { ConsoleError } from '../errors.js';
import { signedIn } from '../session.js';
import { render } from '../views.js';
import { optionalId } from './form.js';

const PAGE_SIZE = 50;

/** The workspace's audit log, newest first, in keyset pages; admins only (it names members, addresses and every change). */
export function addAuditRoutes(router: Router, ctx: AppContext): void {
  router.get('/audit-log', async (req, res) => {
    const { user } = signedIn(res);
    if (!user.canChange) throw new ConsoleError(403, `The audit log is for admins: your role (${user.role}) does not hold the update-companies permission.`);
    const before = optionalId(req.query.before);
    const entries = await listAudit(ctx.db, user.workspaceId, { limit: PAGE_SIZE + 1, before });
    const older = entries.length > PAGE_SIZE ? entries[PAGE_SIZE - 1]!.id : null;
    render(res, 'audit', { title: 'Audit log', page: 'audit', entries: entries.slice(0, PAGE_SIZE), older, paged: before !== undefined });
  });
}

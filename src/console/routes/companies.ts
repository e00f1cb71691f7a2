import type { Router } from 'express';
import { parseWebsite } from '../../companies/input.js';
import { nonEmpty } from '../../input.js';
import { listCompanies } from '../../companies/repository.js';
import { createCompany } from '../../companies/service.js';
import type { AppContext } from '../../context.js';
import { noticeOf } from '../notices.js';
import { actorOf, signedIn } from '../session.js';
import { render } from '../views.js';
import { optionalId, text } from './form.js';

const PAGE_SIZE = 50;

export function addCompanyRoutes(router: Router, ctx: AppContext): void {
  router.get('/companies', async (req, res) => {
    const before = optionalId(req.query.before);
    const companies = await listCompanies(ctx.db, signedIn(res).user.workspaceId, { limit: PAGE_SIZE + 1, before });
    const older = companies.length > PAGE_SIZE ? companies[PAGE_SIZE - 1]!.id : null;
    render(res, 'companies', { title: 'Companies', page: 'companies', notice: noticeOf(req), companies: companies.slice(0, PAGE_SIZE), older, paged: before !== undefined });
  });

  router.post('/companies', async (req, res) => {
    const name = text(req.body, 'name').trim();
    const website = text(req.body, 'website').trim();
    await createCompany(ctx.db, actorOf(req, res), {
      workspaceId: signedIn(res).user.workspaceId,
      name: name === '' ? null : nonEmpty(name, 'Name'),
      website: website === '' ? null : parseWebsite(website, 'Website'),
    });
    res.redirect(303, '/console/companies?notice=company-created');
  });
}

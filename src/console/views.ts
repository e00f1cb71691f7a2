import path from 'node:path';
import type { Response } from 'express';
import { Eta } from 'eta';
import { PROJECT_ROOT } from '../paths.js';

// Templates are Eta files read from the source tree (compiled code finds them through the
// project root, as it finds the OpenAPI document). `<%= %>` escapes every value it prints;
// the layout's `<%~ it.body %>` (a page this code rendered) is the only raw output.
export const VIEWS_DIR = path.join(PROJECT_ROOT, 'src', 'console', 'views');
export const STATIC_DIR = path.join(PROJECT_ROOT, 'src', 'console', 'static');

const eta = new Eta({ views: VIEWS_DIR, autoEscape: true, cache: true, defaultExtension: '.eta' });

export const NAVIGATION = [
  ['overview', 'Overview', '/console'],
  ['leads', 'Leads', '/console/leads'],
  ['connectors', 'Connectors', '/console/connectors'],
  ['workflows', 'Workflows', '/console/workflows'],
  ['deliveries', 'Deliveries', '/console/deliveries'],
  ['keys', 'API keys', '/console/api-keys'],
  ['tags', 'Tags', '/console/tags'],
  ['companies', 'Companies', '/console/companies'],
  ['members', 'Members', '/console/members'],
] as const;
/** Admins only: members are refused the page. */
const ADMIN_NAVIGATION = [...NAVIGATION, ['audit', 'Audit log', '/console/audit-log']] as const;

/** A date as people read it in a table: UTC, to the minute. */
export const when = (value: string | Date | null | undefined): string => (value ? new Date(value).toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : '—');

/** Renders a page: the session (when there is one) and the helpers reach every template. */
export function render(res: Response, view: string, data: Record<string, unknown>, status = 200): void {
  const nav = (res.locals.signedIn as { user?: { canChange?: boolean } } | undefined)?.user?.canChange ? ADMIN_NAVIGATION : NAVIGATION;
  const html = eta.render(view, { ...res.locals, nav, when, ...data });
  res.status(status).type('html').send(html);
}

import type { Request } from 'express';

// What a page says after a change it redirected to (POST, then 303 to the page): a fixed text
// per key, so nothing from the address is ever shown.
const NOTICES: Record<string, string> = {
  'key-revoked': 'The key is revoked: it is refused from now on.',
  'connector-created': 'Connector saved.',
  'connector-updated': 'Connector updated.',
  'connector-enabled': 'Connector enabled: deliveries go to it again.',
  'connector-deleted': 'Connector deleted.',
  'workflow-created': 'Workflow saved.',
  'workflow-updated': 'Workflow updated.',
  'tag-saved': 'Tag saved.',
  'company-created': 'Company created.',
  'password-set': 'Your password is set: sign in with it from now on. Your other sessions have ended.',
  'member-saved': 'Member saved.',
  'member-removed': 'Member removed; their API keys are orphaned and refused.',
  replayed: 'Sent again: the worker makes the new attempts under the same webhook-id.',
};

export const noticeOf = (req: Request): string | undefined => {
  const key = req.query.notice;
  return typeof key === 'string' ? NOTICES[key] : undefined;
};

import { sql } from 'kysely';
import { Parser } from 'htmlparser2';
import type { Config } from '../config.js';
import type { Db } from '../db/connect.js';
import { insertDeliveries } from './delivery-repository.js';
import { composeAutoPushes } from './fan-out.js';
import { sendRequest } from './http-sender.js';

const PAGE_LIMIT = 512 * 1024;
const MAX_REDIRECTS = 3;
const MAX_ANALYSIS_TRIES = 5;
const NAME_LIMIT = 255;
const DESCRIPTION_LIMIT = 10000;

export interface WebsiteMetadata {
  title: string | null;
  description: string | null;
}

const clean = (value: string | undefined | null, limit: number) => {
  const text = value?.replace(/\s+/g, ' ').trim();
  return text ? text.slice(0, limit) : null;
};

/** Title and description from the page head: `<title>`, meta description, then Open Graph / Twitter. */
export function extractMetadata(html: string): WebsiteMetadata {
  let inTitle = false;
  let title = '';
  const meta = new Map<string, string>();
  const parser = new Parser({
    onopentag(name, attributes) {
      if (name === 'title') inTitle = true;
      if (name === 'meta') {
        const key = (attributes.name ?? attributes.property ?? '').toLowerCase();
        if (key && attributes.content !== undefined && !meta.has(key)) meta.set(key, attributes.content);
      }
    },
    ontext(text) {
      if (inTitle) title += text;
    },
    onclosetag(name) {
      if (name === 'title') inTitle = false;
    },
  }, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  parser.write(html);
  parser.end();
  return {
    title: clean(title, NAME_LIMIT) ?? clean(meta.get('og:title') ?? meta.get('og:site_name'), NAME_LIMIT),
    description: clean(meta.get('description') ?? meta.get('og:description') ?? meta.get('twitter:description'), DESCRIPTION_LIMIT),
  };
}

type FetchOutcome = { ok: true; metadata: WebsiteMetadata } | { ok: false; reason: string };

/**
 * Fetches the page under the same network rules as deliveries. Redirects are followed here
 * (sites commonly send http to https or to www), up to three, each hop checked anew.
 */
export async function analyzeWebsite(website: string, config: Config): Promise<FetchOutcome> {
  let url = website;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop += 1) {
    const result = await sendRequest(
      { url, method: 'GET', headers: { 'User-Agent': 'LeadIntake-Analyzer/1.0', Accept: 'text/html,application/xhtml+xml' }, body: null },
      { timeoutMs: config.WEBHOOK_TIMEOUT_MS, allowPrivateNetworks: config.WEBHOOKS_ALLOW_PRIVATE_NETWORKS, replyLimit: PAGE_LIMIT },
    );
    if (result.statusCode === null) return { ok: false, reason: result.error ?? 'unreachable' };
    if (result.statusCode >= 300 && result.statusCode < 400 && result.location) {
      try {
        url = new URL(result.location, url).toString();
      } catch {
        return { ok: false, reason: `invalid redirect target ${result.location.slice(0, 200)}` };
      }
      continue;
    }
    if (result.statusCode < 200 || result.statusCode >= 300) return { ok: false, reason: `HTTP ${result.statusCode}` };
    if (!/\bhtml\b/i.test(result.contentType ?? '')) return { ok: false, reason: `not an HTML page (${result.contentType ?? 'no content type'})` };
    return { ok: true, metadata: extractMetadata(result.reply ?? '') };
  }
  return { ok: false, reason: 'too many redirects' };
}

interface AnalysisEvent { id: number; workspace_id: number; attempts: number; payload: { company_id: number } }

async function claimAnalyses(db: Db, workerId: string, limit: number, leaseMs: number): Promise<AnalysisEvent[]> {
  const result = await sql<AnalysisEvent>`
    UPDATE outbox AS o
    SET locked_by = ${workerId}, locked_until = now() + make_interval(secs => ${leaseMs / 1000}), attempts = o.attempts + 1
    FROM (
      SELECT id FROM outbox
      WHERE processed_at IS NULL AND topic = 'company.analyze' AND available_at <= now()
        AND (locked_until IS NULL OR locked_until < now())
      ORDER BY id LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ) AS due
    WHERE o.id = due.id
    RETURNING o.id, o.workspace_id, o.attempts, o.payload
  `.execute(db);
  return result.rows;
}

/**
 * Finishes one analysis: stores what the site said (the payload's description wins, the
 * title names a company that has no real name yet), sets analyzed or failed, and makes the
 * company's leads analyzed, which auto-pushes them. Only while this worker holds the claim.
 */
async function finishAnalysis(db: Db, workerId: string, event: AnalysisEvent, outcome: FetchOutcome, maxAttempts: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const claimed = await trx.updateTable('outbox').set({ processed_at: new Date(), locked_by: null, locked_until: null, last_error: outcome.ok ? null : outcome.reason })
      .where('id', '=', event.id).where('locked_by', '=', workerId).where('processed_at', 'is', null).returning('id').executeTakeFirst();
    if (!claimed) return;
    const metadata = outcome.ok ? outcome.metadata : { title: null, description: null };
    const updated = await sql<{ id: number }>`
      UPDATE companies SET
        status = ${outcome.ok ? 'analyzed' : 'failed'},
        description = coalesce(description, ${metadata.description}),
        name = CASE WHEN ${metadata.title}::text IS NOT NULL AND (name IS NULL OR name = domain) THEN ${metadata.title} ELSE name END,
        updated_at = now()
      WHERE id = ${event.payload.company_id} AND workspace_id = ${event.workspace_id} AND status = 'pending'
      RETURNING id
    `.execute(trx);
    if (updated.rows.length === 0) return;
    const analyzed = (await sql<{ id: number; workspace_id: number }>`
      UPDATE leads SET analyzed_at = now()
      WHERE company_id = ${event.payload.company_id} AND analyzed_at IS NULL
      RETURNING id, workspace_id
    `.execute(trx)).rows;
    await insertDeliveries(trx, await composeAutoPushes(trx, analyzed, () => event.id, maxAttempts));
  });
}

/** Claims queued website analyses, runs them concurrently, records each. Returns how many ran. */
export async function runWebsiteAnalyses(db: Db, config: Config, workerId: string, options: { limit: number; leaseMs: number }): Promise<number> {
  const events = await claimAnalyses(db, workerId, options.limit, options.leaseMs);
  await Promise.all(events.map(async (event) => {
    try {
      const company = await db.selectFrom('companies').select(['id', 'domain', 'links', 'status'])
        .where('id', '=', event.payload.company_id).where('workspace_id', '=', event.workspace_id).executeTakeFirst();
      const website = company?.links.find((link) => link.type === 'website')?.url ?? (company?.domain ? `https://${company.domain}` : null);
      const outcome: FetchOutcome = !company || company.status !== 'pending' || !website
        ? { ok: false, reason: 'nothing to analyze' }
        : await analyzeWebsite(website, config);
      await finishAnalysis(db, workerId, event, outcome, config.WEBHOOK_MAX_ATTEMPTS);
    } catch (error) {
      // Unexpected (database) trouble: try again later, and give the company up as failed
      // rather than leave it pending forever.
      const reason = error instanceof Error ? error.message : String(error);
      if (event.attempts >= MAX_ANALYSIS_TRIES) {
        await finishAnalysis(db, workerId, event, { ok: false, reason }, config.WEBHOOK_MAX_ATTEMPTS).catch(() => {});
      } else {
        await db.updateTable('outbox')
          .set({ locked_by: null, locked_until: null, last_error: reason.slice(0, 500), available_at: sql`now() + make_interval(secs => ${2 ** event.attempts * 5})` })
          .where('id', '=', event.id).where('locked_by', '=', workerId).execute().catch(() => {});
      }
    }
  }));
  return events.length;
}

export async function releaseAnalysisClaims(db: Db, workerId: string): Promise<void> {
  await db.updateTable('outbox').set({ locked_by: null, locked_until: null })
    .where('locked_by', '=', workerId).where('processed_at', 'is', null).execute();
}

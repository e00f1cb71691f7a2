import { Parser } from 'htmlparser2';
import { findCompanyForAnalysis, finishCompanyAnalysis } from '../companies/repository.js';
import { websiteOfDomain } from '../companies/rules.js';
import type { Config } from '../config.js';
import type { Db } from '../db/connect.js';
import { sendRequest } from '../deliveries/http-sender.js';
import { insertDeliveries } from '../deliveries/repository.js';
import { markCompanyLeadsAnalyzed } from '../leads/write-repository.js';
import type { WorkerMetrics } from '../metrics/metrics.js';
import { claimAnalyses, finishClaimed, retryClaimedLater, type StoredEvent } from '../outbox/repository.js';
import { composeAutoPushes } from './auto-push.js';
import { countFailedAtOnce } from './delivery-counts.js';

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
async function analyzeWebsite(website: string, config: Config): Promise<FetchOutcome> {
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

type AnalysisEvent = StoredEvent<'company.analyze'>;

/**
 * Finishes one analysis: stores what the site said, sets analyzed or failed, and makes the
 * company's leads analyzed, which auto-pushes them. Only while this worker holds the claim.
 */
async function finishAnalysis(db: Db, workerId: string, event: AnalysisEvent, outcome: FetchOutcome, options: { maxAttempts: number; metrics: WorkerMetrics }): Promise<void> {
  const finished = await db.transaction().execute(async (trx) => {
    if (!(await finishClaimed(trx, event.id, workerId, outcome.ok ? null : outcome.reason))) return null;
    const metadata = outcome.ok ? outcome.metadata : { title: null, description: null };
    const companyId = event.payload.company_id;
    if (!(await finishCompanyAnalysis(trx, event.workspace_id, companyId, outcome.ok ? 'analyzed' : 'failed', metadata))) return null;
    const analyzed = await markCompanyLeadsAnalyzed(trx, companyId);
    const autoPushes = await composeAutoPushes(trx, analyzed, () => event.id, options.maxAttempts);
    await insertDeliveries(trx, autoPushes);
    return autoPushes;
  });
  if (!finished) return;
  options.metrics.analysisFinished(outcome.ok ? 'analyzed' : 'failed');
  countFailedAtOnce(options.metrics, finished);
}

/** Claims queued website analyses, runs them concurrently, records each. Returns how many ran. */
export async function runWebsiteAnalyses(
  db: Db, config: Config, workerId: string, options: { limit: number; leaseMs: number; metrics: WorkerMetrics },
): Promise<number> {
  const finishing = { maxAttempts: config.WEBHOOK_MAX_ATTEMPTS, metrics: options.metrics };
  const events = await claimAnalyses(db, workerId, options.limit, options.leaseMs);
  await Promise.all(events.map(async (event) => {
    try {
      const company = await findCompanyForAnalysis(db, event.workspace_id, event.payload.company_id);
      const website = company?.links.find((link) => link.type === 'website')?.url ?? (company?.domain ? websiteOfDomain(company.domain) : null);
      const outcome: FetchOutcome = !company || company.status !== 'pending' || !website
        ? { ok: false, reason: 'nothing to analyze' }
        : await analyzeWebsite(website, config);
      await finishAnalysis(db, workerId, event, outcome, finishing);
    } catch (error) {
      // Unexpected (database) trouble: try again later, and give the company up as failed
      // rather than leave it pending forever.
      const reason = error instanceof Error ? error.message : String(error);
      if (event.attempts >= MAX_ANALYSIS_TRIES) {
        await finishAnalysis(db, workerId, event, { ok: false, reason }, finishing).catch(() => {});
      } else {
        await retryClaimedLater(db, event.id, workerId, reason, 2 ** event.attempts * 5).catch(() => {});
      }
    }
  }));
  return events.length;
}

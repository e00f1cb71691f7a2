import { Parser } from 'htmlparser2';
import { LONG_TEXT_MAX_LENGTH, SHORT_TEXT_MAX_LENGTH } from '../../generated/limits.js';
import type { Config } from '../config.js';
import type { Executor } from '../db/connect.js';
import { firstLink } from '../links.js';
import { storableText } from '../storable-text.js';
import { sendRequest } from '../deliveries/http-sender.js';
import { findCompanyForAnalysis, finishCompanyAnalysis } from './repository.js';
import { websiteOfDomain } from './rules.js';

// Website analysis of a company: which page to read, what it says, and storing that. The
// worker only claims the queued analyses and calls these (src/worker/website-analysis.ts).

const PAGE_LIMIT = 512 * 1024;
const MAX_REDIRECTS = 3;

export interface WebsiteMetadata {
  title: string | null;
  description: string | null;
}

/** What analysing a company's site found: the page's metadata, or why there is none. */
export type WebsiteAnalysis = { ok: true; metadata: WebsiteMetadata } | { ok: false; reason: string };

// A page is text from outside: the text rule applies (after clipping, which can split a surrogate pair).
const clean = (value: string | undefined | null, limit: number) => {
  const text = value?.replace(/\s+/g, ' ').trim();
  return text ? storableText(text.slice(0, limit)).trim() || null : null;
};

/** Title and description from the page head: `<title>`, meta description, then Open Graph / Twitter. */
export function extractMetadata(html: string): WebsiteMetadata {
  let inTitle = false;
  let title = '';
  const meta = new Map<string, string>();
  const parser = new Parser(
    {
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
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  return {
    title: clean(title, SHORT_TEXT_MAX_LENGTH) ?? clean(meta.get('og:title') ?? meta.get('og:site_name'), SHORT_TEXT_MAX_LENGTH),
    description: clean(meta.get('description') ?? meta.get('og:description') ?? meta.get('twitter:description'), LONG_TEXT_MAX_LENGTH),
  };
}

/**
 * Fetches the page under the same network rules as deliveries. Redirects are followed here
 * (sites commonly send http to https or to www), up to three, each hop checked anew.
 */
async function readWebsite(website: string, config: Config): Promise<WebsiteAnalysis> {
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

/** Reads the site of a company still waiting for its analysis: its website link, else its domain. */
export async function analyzeCompanyWebsite(db: Executor, config: Config, workspaceId: number, companyId: number): Promise<WebsiteAnalysis> {
  const company = await findCompanyForAnalysis(db, workspaceId, companyId);
  const website = (company ? firstLink(company.links, 'website') : null) ?? (company?.domain ? websiteOfDomain(company.domain) : null);
  if (!company || company.status !== 'pending' || !website) return { ok: false, reason: 'nothing to analyze' };
  return readWebsite(website, config);
}

/**
 * Stores what the site said and makes the company `analyzed`, or `failed` with the payload's
 * description kept. False when the company is not pending (any more).
 */
export function recordWebsiteAnalysis(db: Executor, workspaceId: number, companyId: number, analysis: WebsiteAnalysis): Promise<boolean> {
  const metadata = analysis.ok ? analysis.metadata : { title: null, description: null };
  return finishCompanyAnalysis(db, workspaceId, companyId, analysis.ok ? 'analyzed' : 'failed', metadata);
}

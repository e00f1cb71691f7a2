import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import slugify from 'slugify';
import { MIN_PHONE_DIGITS, PHONE_MATCH_DIGITS } from './limits.js';

const require = createRequire(import.meta.url);

// The `freemail` package ships the maintained lists of free and disposable mail domains;
// they are indexed once in a Set because its own lookup scans ~90k entries per call.
const FREE_MAIL_DOMAINS: ReadonlySet<string> = (() => {
  const dataDir = path.join(path.dirname(require.resolve('freemail/package.json')), 'data');
  const lines = ['free.txt', 'disposable.txt'].flatMap((file) => readFileSync(path.join(dataDir, file), 'utf8').split('\n'));
  return new Set(lines.map((line) => line.trim().toLowerCase()).filter(Boolean));
})();

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function emailDomain(email: string): string | null {
  const at = email.lastIndexOf('@');
  return at < 0 ? null : email.slice(at + 1).toLowerCase();
}

/** True for gmail.com, mail.yahoo.com and the like: such a domain never identifies a company. */
export function isFreeMailDomain(domain: string): boolean {
  const labels = domain.toLowerCase().split('.');
  for (let start = 0; start < labels.length - 1; start += 1) {
    if (FREE_MAIL_DOMAINS.has(labels.slice(start).join('.'))) return true;
  }
  return false;
}

/** The business domain of an address, or null for free-mail providers. */
export function businessDomainOfEmail(email: string): string | null {
  const domain = emailDomain(email);
  return domain && !isFreeMailDomain(domain) ? domain : null;
}

function parseLooseUrl(value: string): URL | null {
  try {
    return new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `https://${value}`);
  } catch {
    return null;
  }
}

/** `https://www.Acme.com/about` -> `acme.com`. */
export function domainOfUrl(value: string): string | null {
  const url = parseLooseUrl(value.trim());
  if (!url || !url.hostname.includes('.')) return null;
  return url.hostname.toLowerCase().replace(/^www\./, '').replace(/\.$/, '');
}

/** The profile handle of a LinkedIn `/in/<handle>` URL, lower-cased; null for any other URL. */
export function linkedinHandle(value: string): string | null {
  const url = parseLooseUrl(value.trim());
  if (!url) return null;
  const host = url.hostname.toLowerCase();
  if (host !== 'linkedin.com' && !host.endsWith('.linkedin.com')) return null;
  const match = /^\/in\/([^/]+)/i.exec(url.pathname);
  if (!match) return null;
  let handle: string;
  try {
    handle = decodeURIComponent(match[1]!);
  } catch {
    handle = match[1]!;
  }
  return handle.trim().toLowerCase() || null;
}

/** Digits only; null when fewer than 7 remain (such numbers are dropped silently). */
export function normalizePhone(phone: string): string | null {
  const digits = phone.replace(/\D/g, '');
  return digits.length >= MIN_PHONE_DIGITS ? digits : null;
}

/** Trailing digits compared when matching, so country codes and trunk prefixes do not matter. */
export function phoneMatchKey(digits: string): string {
  return digits.length > PHONE_MATCH_DIGITS ? digits.slice(-PHONE_MATCH_DIGITS) : digits;
}

/** `"Is VIP"` -> `is_vip`. */
export function slugifyKey(key: string): string {
  return slugify(key, { lower: true, strict: true, replacement: '_', trim: true });
}

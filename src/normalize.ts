import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import path from 'node:path';
import slugify from 'slugify';
import { parse as parseHost } from 'tldts';
import { MIN_PHONE_DIGITS, PHONE_MATCH_DIGITS } from './limits.js';
import { storableText } from './storable-text.js';

const require = createRequire(import.meta.url);

// The `freemail` package ships the maintained lists of free and disposable mail domains;
// they are indexed in a Set because its own lookup scans ~90k entries per call. The index is
// built on first use: most admin CLI commands never read an email, and indexing is most of
// their start-up. The service builds it before it listens (freeMailDomains in createContext).
let freeMailIndex: ReadonlySet<string> | undefined;

export function freeMailDomains(): ReadonlySet<string> {
  freeMailIndex ??= (() => {
    const dataDir = path.join(path.dirname(require.resolve('freemail/package.json')), 'data');
    const lines = ['free.txt', 'disposable.txt'].flatMap((file) => readFileSync(path.join(dataDir, file), 'utf8').split('\n'));
    return new Set(lines.map((line) => line.trim().toLowerCase()).filter(Boolean));
  })();
  return freeMailIndex;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * The host name as a URL parser reads it: lower-cased, IDNs in punycode, IPv4 forms
 * canonical, IPv6 in brackets, no trailing dot. Null when it is not a host name.
 */
function canonicalHost(host: string): string | null {
  if (host === '' || /[\s/?#@\\]/.test(host)) return null;
  try {
    const url = new URL(`http://${host}`);
    return url.port === '' && url.host === url.hostname ? url.hostname.replace(/\.$/, '') || null : null;
  } catch {
    return null;
  }
}

/**
 * The registrable domain of a host (its public suffix plus one label, from the Public Suffix
 * List through `tldts`, private suffixes such as `github.io` included): `www.eu.acme.co.uk`
 * -> `acme.co.uk`. A host that is only a public suffix (`com`, `co.uk`) is no business
 * domain: null. An IP address, or a single label the list does not know (`localhost`), is
 * kept as it is, so local development and tests can use them.
 */
function registrableDomain(hostname: string): string | null {
  if (isIP(hostname.replace(/^\[(.*)\]$/, '$1')) !== 0) return hostname;
  const parsed = parseHost(hostname, { allowPrivateDomains: true });
  if (parsed.domain) return parsed.domain;
  const listed = parsed.isIcann === true || parsed.isPrivate === true;
  return !listed && parsed.hostname === hostname && !hostname.includes('.') ? hostname : null;
}

/** The registrable domain of a host name as stored or typed (`Mail.Acme.co.uk` -> `acme.co.uk`); see registrableDomain. */
export function domainOfHost(host: string): string | null {
  const canonical = canonicalHost(host.trim().toLowerCase());
  return canonical ? registrableDomain(canonical) : null;
}

/** True for gmail.com, mail.yahoo.com and the like: such a domain never identifies a company. */
function isFreeMailDomain(domain: string): boolean {
  const labels = domain.toLowerCase().split('.');
  const listed = freeMailDomains();
  for (let start = 0; start < labels.length - 1; start += 1) {
    if (listed.has(labels.slice(start).join('.'))) return true;
  }
  return false;
}

/** The registrable domain of an address (`jane@mail.acme.co.uk` -> `acme.co.uk`); null for free-mail providers. */
export function businessDomainOfEmail(email: string): string | null {
  const at = email.lastIndexOf('@');
  const host =
    at < 0
      ? null
      : canonicalHost(
          email
            .slice(at + 1)
            .trim()
            .toLowerCase(),
        );
  return host && !isFreeMailDomain(host) ? registrableDomain(host) : null;
}

/** A URL as people type one: `acme.com/x` is `https://acme.com/x`; null when it is none. */
export function parseLooseUrl(value: string): URL | null {
  try {
    return new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `https://${value}`);
  } catch {
    return null;
  }
}

/** The registrable domain of a URL's host: `https://www.eu.Acme.co.uk/about` -> `acme.co.uk`. */
export function domainOfUrl(value: string): string | null {
  const url = parseLooseUrl(value.trim());
  const host = url?.hostname.replace(/\.$/, '');
  return host ? registrableDomain(host) : null;
}

/**
 * The profile handle of a LinkedIn `/in/<handle>` URL, percent-decoded and lower-cased; null
 * for any other URL. Decoding can make text the database cannot store (`%00`): the text rule
 * applies again to what it gives.
 */
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
  return storableText(handle).trim().toLowerCase() || null;
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

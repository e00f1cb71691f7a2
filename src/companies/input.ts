import { invalidInput } from '../input.js';
import { parseLooseUrl } from '../normalize.js';

// A company's settings as an operator types them.

/** A website as intake reads one (`acme.com` is `https://acme.com/`), http or https only. */
export function parseWebsite(value: string, flag: string): string {
  const url = parseLooseUrl(value);
  if (!url) throw invalidInput(`${flag} must be a URL, got "${value}".`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidInput(`${flag} must be an http or https URL.`);
  return url.toString();
}

import type { CompanyStatus, Link } from '../../generated/api.js';

// Rules about companies that intake, the batch's set-based run and website analysis all apply.

/** The site of a registrable domain, for a company that has no website of its own: `acme.com` -> `https://acme.com`. */
export const websiteOfDomain = (domain: string): string => `https://${domain}`;

/** The website link of a company made from a person's email domain: that domain's site. */
export const websiteLinkOfDomain = (domain: string): Link => ({ type: 'website', url: websiteOfDomain(domain) });

/** A company that intake creates waits for website analysis when it has a domain and the caller asked to enrich. */
export const newCompanyStatus = (domain: string | null, enrich: boolean): CompanyStatus => (domain !== null && enrich ? 'pending' : 'not_analyzed');

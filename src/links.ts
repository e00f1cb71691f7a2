import type { Link, LinkType } from '../generated/api.js';

/**
 * The URL of the first link of `type`: what a lead or company shows as its `website` or
 * `linkedin_url`, what a delivery carries under those names, and the page website analysis reads.
 */
export const firstLink = (links: readonly Link[], type: LinkType): string | null => links.find((link) => link.type === type)?.url ?? null;

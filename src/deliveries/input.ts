import type { DeliveryBranch } from '../db/schema.js';
import { invalidInput, parseTimestamp } from '../input.js';

// What an operator types to find and recover deliveries.

/** `--since` and an optional `--until` (undefined: now), as UTC ISO strings; refused when --until is before --since. */
export function parseTimeWindow(since: string, until: string | undefined): { since: string; until?: string } {
  const window = { since: parseTimestamp(since, '--since'), until: until === undefined ? undefined : parseTimestamp(until, '--until') };
  if (window.until !== undefined && window.until < window.since) throw invalidInput(`--until (${window.until}) must not be before --since (${window.since}).`);
  return window;
}

const BRANCHES: DeliveryBranch[] = ['pending', 'Delivered', 'Failed'];

export function parseBranch(value: string): DeliveryBranch {
  if (!BRANCHES.includes(value as DeliveryBranch)) throw invalidInput(`--branch must be one of ${BRANCHES.join(', ')}, got "${value}".`);
  return value as DeliveryBranch;
}

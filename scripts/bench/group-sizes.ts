// How many write requests each group committed together (the service's
// lead_intake_write_group_requests histogram, read from its METRICS_PORT before and after a
// scenario): groups per size bucket, non-cumulative, and the mean.
import { parseMetrics } from '../../test/support/metrics.js';

export interface GroupSizes {
  groups: number;
  requests: number;
  /** Groups per bucket, by upper bound (`le`), each counted once. */
  buckets: Record<string, number>;
}

export type GroupSnapshot = Map<string, number> & { sum?: number };

export async function snapshotGroups(metricsUrl: string): Promise<GroupSnapshot> {
  const samples = parseMetrics(await (await fetch(metricsUrl)).text());
  const snapshot: GroupSnapshot = new Map(samples.all('lead_intake_write_group_requests_bucket').map(({ labels, value }) => [labels.le!, value]));
  snapshot.sum = samples.value('lead_intake_write_group_requests_sum');
  return snapshot;
}

export function groupSizesBetween(before: GroupSnapshot, after: GroupSnapshot): GroupSizes {
  const buckets: Record<string, number> = {};
  let below = 0;
  for (const [le, cumulative] of after) {
    const count = cumulative - (before.get(le) ?? 0);
    buckets[le] = count - below;
    below = count;
  }
  return { groups: below, requests: (after.sum ?? 0) - (before.sum ?? 0), buckets };
}

export function formatGroupSizes(sizes: GroupSizes | undefined): string {
  if (!sizes || sizes.groups === 0) return '';
  const spread = Object.entries(sizes.buckets)
    .filter(([, count]) => count > 0)
    .map(([le, count]) => `<=${le}: ${count}`)
    .join(', ');
  return `${sizes.groups} groups, mean ${(sizes.requests / sizes.groups).toFixed(1)} requests (${spread})`;
}

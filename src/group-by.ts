/**
 * Items grouped by a key, keys in the order they first appear and each group's items in
 * their order (Map.groupBy, which Node 20 lacks); `valueOf` keeps only what a group needs.
 */
export function groupBy<T, K, V = T>(items: Iterable<T>, keyOf: (item: T) => K, valueOf: (item: T) => V = (item) => item as unknown as V): Map<K, V[]> {
  const groups = new Map<K, V[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(valueOf(item));
    else groups.set(key, [valueOf(item)]);
  }
  return groups;
}

// A map kept under a bound, the oldest entry going first: what a process keeps between requests
// (funding facts, quotes it made) must never grow with what partners send.

/** Sets `key` to `value` as the newest entry; past `max` entries, the oldest goes. */
export function putBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

/** A bound for such a map: a whole number of entries, at least one. */
export function checkedBound(max: number, what: string): number {
  if (!Number.isInteger(max) || max < 1) throw new Error(`bad bound on ${what}: ${max}`);
  return max;
}

// A bounded cache over a Map, least recently used out first: a Map keeps insertion order, so a value
// read is moved to the end and the first key is the oldest.

/** Puts `value` under `key` as the most recently used, dropping the oldest past `limit`; returns `value`. */
export function remember<V>(cache: Map<string, V>, key: string, value: V, limit: number): V {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size > limit) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  return value;
}

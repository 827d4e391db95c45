/**
 * A bounded memo: `compute`'s answer kept in `cache` under `key`, and the
 * whole map dropped once it holds `most`. For values a process sees few of
 * (locales, zones, schemas and statement shapes) that cost something to
 * build each time: a flood of new keys costs recomputation, never memory.
 * An undefined answer is kept too.
 */
export function remember<V>(cache: Map<string, V>, key: string, compute: () => V, most = 1000): V {
  const known = cache.get(key);
  if (known !== undefined || cache.has(key)) return known as V;
  if (cache.size >= most) cache.clear();
  const value = compute();
  cache.set(key, value);
  return value;
}

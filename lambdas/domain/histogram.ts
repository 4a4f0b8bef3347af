// A mergeable latency histogram: log-spaced buckets (each 5 % wider than the last), stored
// sparsely as { bucket index: count }. Percentiles read from merged histograms are within 5 % of
// the true value, which is what a health report needs, and any number of workers' histograms merge
// by adding counts.

const GROWTH = 1.05;
const LOG_GROWTH = Math.log(GROWTH);

export type Histogram = Record<string, number>;

/** Bucket 0 holds values up to 1 ms; bucket i holds (GROWTH^(i-1), GROWTH^i]. */
export function bucketOf(valueMs: number): number {
  if (!(valueMs > 1)) return 0;
  return Math.ceil(Math.log(valueMs) / LOG_GROWTH - 1e-9);
}

/** The upper bound of a bucket, in whole milliseconds. */
export function bucketUpperBound(bucket: number): number {
  return bucket === 0 ? 1 : Math.round(GROWTH ** bucket);
}

export function record(histogram: Histogram, valueMs: number): void {
  const key = String(bucketOf(valueMs));
  histogram[key] = (histogram[key] ?? 0) + 1;
}

export function merge(into: Histogram, from: Histogram): void {
  for (const [key, count] of Object.entries(from)) into[key] = (into[key] ?? 0) + count;
}

export function totalOf(histogram: Histogram): number {
  return Object.values(histogram).reduce((sum, count) => sum + count, 0);
}

/** The value at or below which `p` percent of the samples lie (a bucket's upper bound); null if empty. */
export function percentile(histogram: Histogram, p: number): number | null {
  const total = totalOf(histogram);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const bucket of Object.keys(histogram)
    .map(Number)
    .sort((a, b) => a - b)) {
    seen += histogram[String(bucket)] ?? 0;
    if (seen >= rank) return bucketUpperBound(bucket);
  }
  return null;
}

// Durations in words: plain arithmetic, no DOM (unit-tested).

/** `850 ms`, `12.3 s`, `2 min 5 s`: rounded first, so 59,960 ms is `1 min 0 s`, never `60.0 s` or `1 min 60 s`. */
export function duration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '—';
  const sign = ms < 0 ? '-' : '';
  const size = Math.abs(ms);
  if (Math.round(size) < 1000) return `${sign}${Math.round(size)} ms`;
  if (Math.round(size / 100) < 600) return `${sign}${(size / 1000).toFixed(1)} s`;
  const seconds = Math.round(size / 1000);
  return `${sign}${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

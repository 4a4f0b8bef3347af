// The rule of a debounced trigger (issue 19 item 10): a window opens with the first trigger and
// lasts S seconds, fixed (decision 0131); a trigger before its end joins it, a later one opens the
// next. The window's run is due at its end and carries the last trigger's payload.

export type DebounceStep = { readonly kind: 'join'; readonly runId: string } | { readonly kind: 'open'; readonly endsAt: number };

export function debounceStep(window: { readonly runId: string; readonly endsAt: number } | null, now: number, debounceSeconds: number): DebounceStep {
  if (window && window.endsAt > now) return { kind: 'join', runId: window.runId };
  return { kind: 'open', endsAt: now + debounceSeconds * 1000 };
}

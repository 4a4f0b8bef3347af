// Wall-clock arithmetic in IANA zones with nothing but Intl: the offset of a zone at an instant,
// and the instants (zero, one or two) at which a zone's clocks show a given wall time.
// Intl tells the offset at an instant, not where it changes: ZoneOffsets reads it at the edges of
// 12-hour cells and bisects only a cell whose edges differ, so evaluating a schedule costs a few
// reads per day it spans plus about 26 per transition, not several per wall time.

import { remember } from '../core/lru';

const HOUR = 3_600_000;
/**
 * Formatters by canonical zone name, and the canonical name of each spelling seen (zone names are
 * case-insensitive, so a caller can send any number of spellings of one zone). Both are bounded,
 * least recently used first out: there are about 600 zones.
 */
const MAX_FORMATTERS = 256;
const MAX_SPELLINGS = 1024;
const formatters = new Map<string, Intl.DateTimeFormat>();
const canonicalNames = new Map<string, string>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  const known = canonicalNames.get(timeZone);
  const cached = known === undefined ? undefined : formatters.get(known);
  if (known !== undefined && cached !== undefined) {
    remember(formatters, known, cached, MAX_FORMATTERS);
    return cached;
  }
  // Throws a RangeError for a zone Intl does not know.
  const made = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const canonical = made.resolvedOptions().timeZone;
  const formatter = formatters.get(canonical) ?? made;
  remember(formatters, canonical, formatter, MAX_FORMATTERS);
  remember(canonicalNames, timeZone, canonical, MAX_SPELLINGS);
  return formatter;
}

/** How many formatters and zone spellings are cached (for tests and diagnostics). */
export function timeZoneCacheSizes(): { readonly formatters: number; readonly spellings: number } {
  return { formatters: formatters.size, spellings: canonicalNames.size };
}

export function isValidTimeZone(timeZone: string): boolean {
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

/**
 * The wall time shown in `timeZone` at `instant`, as epoch milliseconds read as if the wall time
 * were UTC ("naive" time). Milliseconds are carried over, since Intl drops them.
 */
export function toWallTime(instant: number, timeZone: string): number {
  const parts = formatterFor(timeZone).formatToParts(new Date(instant));
  const field = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((part) => part.type === type)?.value);
  const wholeSeconds = Date.UTC(field('year'), field('month') - 1, field('day'), field('hour'), field('minute'), field('second'));
  return wholeSeconds + (((instant % 1000) + 1000) % 1000);
}

/** The zone's offset from UTC at `instant`, in milliseconds. */
export function offsetAt(instant: number, timeZone: string): number {
  return toWallTime(instant, timeZone) - instant;
}

/** Wider than the offset of any zone, past or present (all lie within ±16 hours of UTC). */
const MAX_OFFSET = 16 * HOUR;
/** Offsets are read at the edges of cells this long; a cell holds at most one transition. */
const CELL = 12 * HOUR;

/** A stretch of instants, [start, end), over which a zone's offset does not change. */
export interface OffsetSpan {
  readonly start: number;
  readonly end: number;
  readonly offset: number;
}

/**
 * The offsets of one zone over the instants an evaluation looks at, learnt from Intl a cell at a
 * time and kept: two reads per 12 hours of instants, and a bisection (about 26 reads) to find the
 * instant of each transition. Assumes that no two transitions fall within one cell (daylight
 * saving changes are months apart); test/unit/cron-reference.test.ts checks zones with unusual
 * shifts against a minute-by-minute walk.
 */
export class ZoneOffsets {
  private readonly edges = new Map<number, number>();
  private readonly changes = new Map<number, number | null>();

  constructor(private readonly timeZone: string) {}

  private edge(cell: number): number {
    let offset = this.edges.get(cell);
    if (offset === undefined) {
      offset = offsetAt(cell * CELL, this.timeZone);
      this.edges.set(cell, offset);
    }
    return offset;
  }

  /** The first instant of the cell with the offset of its end, or null when the cell has none. */
  private change(cell: number): number | null {
    let at = this.changes.get(cell);
    if (at === undefined) {
      const before = this.edge(cell);
      at = null;
      if (this.edge(cell + 1) !== before) {
        let low = cell * CELL;
        let high = low + CELL;
        while (high - low > 1) {
          const middle = Math.floor((low + high) / 2);
          if (offsetAt(middle, this.timeZone) === before) low = middle;
          else high = middle;
        }
        at = high;
      }
      this.changes.set(cell, at);
    }
    return at;
  }

  /** Spans of constant offset covering the instants [from, to], earliest first. */
  spans(from: number, to: number): OffsetSpan[] {
    const spans: OffsetSpan[] = [];
    const push = (start: number, end: number, offset: number): void => {
      const last = spans.at(-1);
      if (last !== undefined && last.offset === offset && last.end === start) spans[spans.length - 1] = { start: last.start, end, offset };
      else if (end > start) spans.push({ start, end, offset });
    };
    for (let cell = Math.floor(from / CELL); cell * CELL <= to; cell++) {
      const start = cell * CELL;
      const change = this.change(cell);
      if (change === null) {
        push(start, start + CELL, this.edge(cell));
      } else {
        push(start, change, this.edge(cell));
        push(change, start + CELL, this.edge(cell + 1));
      }
    }
    return spans;
  }

  /**
   * The instants at which the zone's clocks show `wallTime`, earliest first (none in a
   * spring-forward gap, two in a fall-back overlap), and for a wall time in a gap the instant
   * the gap ends.
   */
  instantsOf(wallTime: number): { readonly instants: number[]; readonly endOfGap: number | null } {
    const spans = this.spans(wallTime - MAX_OFFSET, wallTime + MAX_OFFSET);
    const instants: number[] = [];
    let endOfGap: number | null = null;
    for (const [i, span] of spans.entries()) {
      const instant = wallTime - span.offset;
      if (instant >= span.start && instant < span.end) instants.push(instant);
      const next = spans[i + 1];
      // The clocks jump from span.end + span.offset to span.end + next.offset.
      if (next !== undefined && span.end + span.offset <= wallTime && wallTime < span.end + next.offset) endOfGap = span.end;
    }
    return { instants, endOfGap: instants.length === 0 ? endOfGap : null };
  }

  /** The earliest wall time the clocks show at or after `instant` (a fall-back may show one earlier than its own). */
  earliestWallFrom(instant: number): number {
    let earliest = Infinity;
    for (const span of this.spans(instant, instant + 2 * MAX_OFFSET)) {
      if (span.end > instant) earliest = Math.min(earliest, Math.max(span.start, instant) + span.offset);
    }
    return earliest;
  }

  /** The latest wall time the clocks show at or before `instant`. */
  latestWallBy(instant: number): number {
    let latest = -Infinity;
    for (const span of this.spans(instant - 2 * MAX_OFFSET, instant)) {
      if (span.start <= instant) latest = Math.max(latest, Math.min(span.end - 1, instant) + span.offset);
    }
    return latest;
  }
}

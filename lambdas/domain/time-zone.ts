// Wall-clock arithmetic in IANA zones with nothing but Intl: the offset of a zone at an instant,
// and the instants (zero, one or two) at which a zone's clocks show a given wall time.

const HOUR = 3_600_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
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
  const field = (type: Intl.DateTimeFormatPartTypes): number =>
    Number(parts.find((part) => part.type === type)?.value);
  const wholeSeconds = Date.UTC(
    field('year'),
    field('month') - 1,
    field('day'),
    field('hour'),
    field('minute'),
    field('second'),
  );
  return wholeSeconds + (((instant % 1000) + 1000) % 1000);
}

/** The zone's offset from UTC at `instant`, in milliseconds. */
export function offsetAt(instant: number, timeZone: string): number {
  return toWallTime(instant, timeZone) - instant;
}

/**
 * The instants at which the zone's clocks show `wallTime`, earliest first: none in a
 * spring-forward gap, two in a fall-back overlap, one otherwise.
 */
export function instantsOfWallTime(wallTime: number, timeZone: string): number[] {
  const offsets = new Set([
    offsetAt(wallTime - 36 * HOUR, timeZone),
    offsetAt(wallTime, timeZone),
    offsetAt(wallTime + 36 * HOUR, timeZone),
  ]);
  const instants = new Set<number>();
  for (const offset of offsets) {
    const instant = wallTime - offset;
    if (offsetAt(instant, timeZone) === offset) instants.add(instant);
  }
  return [...instants].sort((a, b) => a - b);
}

/**
 * For a wall time inside a spring-forward gap: the first instant after the gap, that is the
 * instant the clocks jumped. Found by bisection between an instant before and one after the jump.
 */
export function endOfGap(wallTime: number, timeZone: string): number {
  const before = offsetAt(wallTime - 36 * HOUR, timeZone);
  let low = wallTime - before - 36 * HOUR; // offset here is `before`
  let high = wallTime - before; // already past the jump: this instant shows a later wall time
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (offsetAt(middle, timeZone) === before) low = middle;
    else high = middle;
  }
  return high;
}

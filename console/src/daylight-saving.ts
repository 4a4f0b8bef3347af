// Where a daylight-saving change falls among fire times: plain Intl, no DOM (unit-tested).

/** The zone's offset from UTC at an instant, e.g. `GMT+02:00`. */
export function offsetAt(iso: string, zone: string): string {
  const part = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
    .formatToParts(new Date(iso))
    .find((p) => p.type === 'timeZoneName');
  return part?.value ?? '';
}

/** The wall-clock time of day in the zone, `HH:MM`. */
export function wallTime(iso: string, zone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(iso));
}

/**
 * A note for each fire time after which the zone's offset changed, and for a fire time of a
 * fixed-time schedule that a change moved off its usual wall time; null elsewhere.
 */
export function daylightSavingNotes(fireTimes: readonly string[], zone: string): (string | null)[] {
  // A fixed-time schedule fires at one wall time; one fire time off it was moved by a change.
  const walls = fireTimes.map((fire) => wallTime(fire, zone));
  const counts = new Map<string, number>();
  for (const wall of walls) counts.set(wall, (counts.get(wall) ?? 0) + 1);
  const usual = [...counts.entries()].find(([, count]) => count >= walls.length - 1 && walls.length > 2)?.[0];
  return fireTimes.map((fire, index) => {
    const previous = fireTimes[index - 1];
    const notes: string[] = [];
    if (previous && offsetAt(previous, zone) !== offsetAt(fire, zone)) {
      notes.push(
        `Daylight saving changes before this one (${offsetAt(previous, zone)} → ${offsetAt(fire, zone)}): a fixed-time schedule fires a skipped wall time once when the gap ends and a repeated one once; others skip the gap's wall times and fire repeated ones each time.`,
      );
    }
    if (usual && walls[index] !== usual) notes.push(`Moved by a daylight-saving change: ${walls[index]} instead of ${usual} wall time.`);
    return notes.length > 0 ? notes.join(' ') : null;
  });
}

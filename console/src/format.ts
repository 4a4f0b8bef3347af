// Times with their zone, durations, and schedules in words.
import cronstrue from 'cronstrue';
import type { Schedule } from './api';
import { h } from './dom';

export const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(zone: string): Intl.DateTimeFormat {
  let found = formatters.get(zone);
  if (!found) {
    found = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'short',
    });
    formatters.set(zone, found);
  }
  return found;
}

/** `2026-11-23 20:01:05 GMT+1` in the given zone (the viewer's by default). */
export function timeText(iso: string, zone = viewerZone): string {
  const parts = Object.fromEntries(formatter(zone).formatToParts(new Date(iso)).map((part) => [part.type, part.value]));
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`;
}

/** A `<time>` element, its UTC instant in the title. */
export function time(iso: string | null | undefined, zone = viewerZone): HTMLElement | string {
  if (!iso) return '—';
  return h('time', { datetime: iso, title: iso }, timeText(iso, zone));
}

/** The zone's offset from UTC at an instant, e.g. `GMT+02:00`. */
export function offsetAt(iso: string, zone: string): string {
  const part = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' }).formatToParts(new Date(iso)).find((p) => p.type === 'timeZoneName');
  return part?.value ?? '';
}

/** The wall-clock time of day in the zone, `HH:MM`. */
export function wallTime(iso: string, zone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(iso));
}

export function duration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '—';
  if (Math.abs(ms) < 1000) return `${Math.round(ms)} ms`;
  if (Math.abs(ms) < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function between(from: string | null, to: string | null): number | null {
  return from && to ? Date.parse(to) - Date.parse(from) : null;
}

/** A schedule in words, with its zone. */
export function scheduleText(schedule: Schedule): string {
  switch (schedule.kind) {
    case 'now':
      return 'Once, when created';
    case 'delay':
      return `Once, ${duration(schedule.seconds * 1000)} after it was created`;
    case 'at':
      return `Once, at ${timeText(schedule.at, 'UTC')}`;
    case 'cron': {
      let words: string;
      try {
        words = cronstrue.toString(schedule.expression, { use24HourTimeFormat: true, verbose: false });
      } catch {
        words = schedule.expression;
      }
      return `${words} (${schedule.timezone ?? 'UTC'}; cron ${schedule.expression})`;
    }
  }
}

export function zoneOf(schedule: Schedule): string {
  return schedule.kind === 'cron' ? (schedule.timezone ?? 'UTC') : 'UTC';
}

/**
 * Notes where a daylight-saving change falls among the fire times: the offset differs from the
 * previous one. A fixed-time cron whose wall time moved (a gap) or a step in the times is named.
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
      notes.push(`Daylight saving changes before this one (${offsetAt(previous, zone)} → ${offsetAt(fire, zone)}): wall times the change skips do not fire, or fire once at its end for a fixed-time schedule; repeated ones fire once.`);
    }
    if (usual && walls[index] !== usual) notes.push(`Moved by a daylight-saving change: ${walls[index]} instead of ${usual} wall time.`);
    return notes.length > 0 ? notes.join(' ') : null;
  });
}

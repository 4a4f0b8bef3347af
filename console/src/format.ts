// Times with their zone, durations, and schedules in words.
import cronstrue from 'cronstrue';
import type { Schedule } from './api';
import { h } from './dom';
import { duration } from './duration';

export { daylightSavingNotes } from './daylight-saving';
export { duration } from './duration';

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
  const parts = Object.fromEntries(
    formatter(zone)
      .formatToParts(new Date(iso))
      .map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`;
}

/** A `<time>` element, its UTC instant in the title. */
export function time(iso: string | null | undefined, zone = viewerZone): HTMLElement | string {
  if (!iso) return '—';
  return h('time', { datetime: iso, title: iso }, timeText(iso, zone));
}

/** An instant as a `datetime-local` input's value: the viewer's wall time, to the second. */
export function localInputValue(iso: string): string {
  const at = new Date(iso);
  const two = (value: number): string => String(value).padStart(2, '0');
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}T${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
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
      return `${words} (${schedule.timezone ?? 'UTC'}; cron ${schedule.expression})${recurringExtras(schedule)}`;
    }
    case 'every':
      return `Every ${schedule.interval}${schedule.anchor ? ` from ${timeText(schedule.anchor, 'UTC')}` : ''}${recurringExtras(schedule)}`;
  }
}

/** A recurring schedule's end, count, jitter and excluded days, in words. */
function recurringExtras(schedule: Extract<Schedule, { kind: 'cron' | 'every' }>): string {
  const parts = [
    schedule.endAt ? `until ${timeText(schedule.endAt, 'UTC')}` : '',
    schedule.maxOccurrences ? `${schedule.maxOccurrences} times in all` : '',
    schedule.jitterSeconds ? `each start delayed by up to ${duration(schedule.jitterSeconds * 1000)}` : '',
    schedule.excludeDates?.length ? `not on ${schedule.excludeDates.join(', ')}` : '',
  ].filter((part) => part !== '');
  return parts.length > 0 ? `; ${parts.join('; ')}` : '';
}

export function zoneOf(schedule: Schedule): string {
  return schedule.kind === 'cron' || schedule.kind === 'every' ? (schedule.timezone ?? 'UTC') : 'UTC';
}

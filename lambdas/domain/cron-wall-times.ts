// The wall times a parsed cron expression matches, in order, from cron-parser's fields. cron-parser
// parses and validates; its own `next()` builds a zoned date per step and walks a yearly
// expression day by day, about 40 µs a match and 1 ms a year (docs/performance.md), so the walk is
// done here on naive wall time (epoch ms read as UTC): months that cannot match are skipped whole,
// and a matching day yields its times from the sorted hours, minutes and seconds (five-field
// expressions match second 0 only). The day rule mirrors
// cron-parser's (`L`, `<day>L`, `#`, either day field when both are restricted);
// test/unit/cron-wall-times.test.ts compares the two.
import type { CronExpression } from 'cron-parser';

const SECOND = 1000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The Gregorian calendar repeats every 400 years: a walk that finds nothing in them never will. */
const MAX_DAYS_WITHOUT_MATCH = 146_097;

const numbers = (values: readonly (number | string)[]): number[] => values.filter((value): value is number => typeof value === 'number').sort((a, b) => a - b);

const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

export class CronWallTimes {
  private readonly seconds: number[];
  private readonly minutes: number[];
  private readonly hours: number[];
  private readonly months: Set<number>;
  private readonly days: Set<number>;
  private readonly weekdays: Set<number>;
  private readonly lastDay: boolean;
  /** Weekdays of `<day>L` items: the last such day of the month. */
  private readonly lastWeekdays: Set<number>;
  private readonly nth: number;
  private readonly dayRestricted: boolean;
  private readonly weekdayRestricted: boolean;
  /**
   * The times of day that match, from the sorted hours and minutes (each minute's seconds are
   * walked apart: `* * * * * *` matches 86,400 times a day, too many to keep per expression).
   */
  private readonly minutesOfDay: number[];

  constructor(expression: CronExpression) {
    const { second, minute, hour, dayOfMonth, month, dayOfWeek } = expression.fields;
    this.seconds = numbers(second.values);
    this.minutes = numbers(minute.values);
    this.hours = numbers(hour.values);
    this.months = new Set(numbers(month.values));
    this.days = new Set(numbers(dayOfMonth.values));
    this.weekdays = new Set(numbers(dayOfWeek.values));
    this.lastDay = dayOfMonth.hasLastChar;
    // As cron-parser does, the first character of every value of the field counts.
    this.lastWeekdays = new Set(
      dayOfWeek.hasLastChar ? dayOfWeek.values.map((value) => Number.parseInt(String(value).charAt(0), 10) % 7).filter((d) => !Number.isNaN(d)) : [],
    );
    this.nth = dayOfWeek.nthDay;
    this.dayRestricted = !dayOfMonth.isWildcard;
    this.weekdayRestricted = !dayOfWeek.isWildcard;
    this.minutesOfDay = this.hours.flatMap((h) => this.minutes.map((m) => h * HOUR + m * MINUTE));
  }

  /**
   * The matching wall times at or after `wallTime`, in order, one per `next()` call, which gives
   * null when the expression matches no day at all. The expression itself is immutable and shared.
   */
  from(wallTime: number): { next(): number | null } {
    const { minutesOfDay, seconds } = this;
    let day = Math.floor(wallTime / DAY) * DAY;
    // The first (minute, second) of the day at or after wallTime.
    let minuteIndex = minutesOfDay.findIndex((t) => t + (seconds.at(-1) ?? 0) * SECOND >= wallTime - day);
    let secondIndex = 0;
    if (minuteIndex === -1) {
      day += DAY;
      minuteIndex = 0;
    } else {
      const minuteStart = minutesOfDay[minuteIndex] ?? 0;
      secondIndex = Math.max(
        0,
        seconds.findIndex((s) => minuteStart + s * SECOND >= wallTime - day),
      );
    }
    return {
      next: (): number | null => {
        if (secondIndex >= seconds.length) {
          secondIndex = 0;
          minuteIndex++;
        }
        if (minuteIndex >= minutesOfDay.length) {
          day += DAY;
          minuteIndex = 0;
        }
        const matching = this.firstMatchingDay(day);
        if (matching === null) return null;
        if (matching !== day) {
          day = matching;
          minuteIndex = 0;
          secondIndex = 0;
        }
        return day + (minutesOfDay[minuteIndex] ?? 0) + (seconds[secondIndex++] ?? 0) * SECOND;
      },
    };
  }

  /** The first day at or after `day` (naive ms at 00:00) the expression matches, or null. */
  private firstMatchingDay(day: number): number | null {
    for (let candidate = day; candidate - day <= MAX_DAYS_WITHOUT_MATCH * DAY;) {
      const date = new Date(candidate);
      const year = date.getUTCFullYear();
      const month = date.getUTCMonth();
      if (!this.months.has(month + 1)) {
        candidate = Date.UTC(year, month + 1, 1);
        continue;
      }
      if (this.dayMatches(date.getUTCDate(), date.getUTCDay(), daysInMonth(year, month))) return candidate;
      candidate += DAY;
    }
    return null;
  }

  /** cron-parser's rule (CronExpression#matchDayOfMonth). */
  private dayMatches(dayOfMonth: number, weekday: number, monthLength: number): boolean {
    const matchedDay = this.days.has(dayOfMonth) || (this.lastDay && dayOfMonth === monthLength);
    const matchedWeekday =
      (this.weekdays.has(weekday) && (this.nth <= 0 || Math.ceil(dayOfMonth / 7) === this.nth)) ||
      (this.lastWeekdays.has(weekday) && dayOfMonth > monthLength - 7);
    if (this.dayRestricted && this.weekdayRestricted) return matchedDay || matchedWeekday;
    if (this.dayRestricted) return matchedDay;
    if (this.weekdayRestricted) return matchedWeekday;
    return matchedDay; // both wildcards: every day is in `days`
  }
}

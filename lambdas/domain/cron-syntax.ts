// The cron syntax the scheduler accepts (docs/api.md, "Cron syntax"; decisions 0070, 0150): five
// fields of numbers, names, `*`, ranges, lists and steps, plus `L` and `#` in the day fields, or six
// with a seconds field first. cron-parser accepts more (`H`, `?`, nicknames) and some of it is
// unstable or changes meaning under
// the daylight-saving rule, so every field is checked against this grammar before cron-parser
// sees it, and a refusal names the field.

export const CRON_FIELDS = ['minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;
/** A six-field expression has a seconds field first (every ten seconds: `*\/10 * * * * *`; `30 0 9 * * MON-FRI`). */
export const CRON_FIELDS_WITH_SECONDS = ['second', ...CRON_FIELDS] as const;
export type CronField = (typeof CRON_FIELDS_WITH_SECONDS)[number];

/** The fields of an expression of `count` fields (five, or six with seconds), by position. */
export const cronFieldsOf = (count: number): readonly CronField[] => (count === CRON_FIELDS_WITH_SECONDS.length ? CRON_FIELDS_WITH_SECONDS : CRON_FIELDS);

const NUMBER = String.raw`\d{1,2}`;
const NAMED = String.raw`(?:\d{1,2}|[A-Za-z]{3})`;
/** `*`, `*\/n`, `a`, `a-b`, `a/n` (from a to the field's end) and `a-b/n`. */
const item = (value: string): string => String.raw`(?:\*|${value}(?:-${value})?)(?:/\d{1,2})?`;
const list = (element: string): RegExp => new RegExp(String.raw`^${element}(?:,${element})*$`);

const GRAMMAR: Record<CronField, RegExp> = {
  second: list(item(NUMBER)),
  minute: list(item(NUMBER)),
  hour: list(item(NUMBER)),
  // `L` is the month's last day, alone or in a list (`1,L`).
  'day-of-month': list(String.raw`(?:${item(NUMBER)}|L)`),
  month: list(item(NAMED)),
  // `5L` (the month's last Friday) and `5#2` (its second Friday) stand alone: cron-parser
  // drops an `nL` that shares a list with other days.
  'day-of-week': new RegExp(String.raw`^(?:${list(item(NAMED)).source.slice(1, -1)}|${NAMED}L|${NAMED}#[1-5])$`),
};

/**
 * Why a field of an expression is refused, or null when it follows the grammar (its
 * values and ranges are then checked by cron-parser).
 */
export function cronFieldRefusal(field: CronField, raw: string): string | null {
  if (GRAMMAR[field].test(raw)) return null;
  const names = field === 'month' || field === 'day-of-week';
  const withoutNames = names ? raw.replace(/[A-Za-z]{3}/g, '0') : raw;
  if (raw.includes('?')) return '`?` is not supported; use `*`';
  if (/H/.test(withoutNames)) {
    return '`H` (a hashed value) is not supported: cron-parser picks it at random at each evaluation; write the value';
  }
  if (field === 'day-of-month' && /W/.test(raw)) return '`W` (nearest weekday) is not supported';
  if (raw.includes('L') && field !== 'day-of-month' && field !== 'day-of-week') return '`L` is allowed only in the day-of-month and day-of-week fields';
  if (raw.includes('L') || raw.includes('#')) {
    return field === 'day-of-month'
      ? '`L` (the last day of the month) stands alone or as an item of a list, e.g. `L` or `1,L`'
      : '`<day>L` (the last such day of the month) and `<day>#<1-5>` (the nth) stand alone in the day-of-week field, e.g. `5L` or `MON#2`';
  }
  return names
    ? 'use numbers or three-letter names, `*`, ranges `a-b`, lists `a,b` and steps `/n`'
    : 'use numbers, `*`, ranges `a-b`, lists `a,b` and steps `/n`';
}

/** Why a whole expression is refused before its fields are looked at, or null. */
export function cronShapeRefusal(fields: readonly string[]): string | null {
  if (fields.length === 1 && fields[0]?.startsWith('@')) {
    return `nicknames like ${fields[0]} are not supported; write the five fields, e.g. \`0 0 * * *\` for @daily`;
  }
  if (fields.length !== CRON_FIELDS.length && fields.length !== CRON_FIELDS_WITH_SECONDS.length) {
    return `must have five fields (minute hour day-of-month month day-of-week), or six with seconds first, got ${fields.length}`;
  }
  return null;
}

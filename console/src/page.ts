// What a page gets from the router.
import { ApiError } from './api';
import { h } from './dom';

export interface PageContext {
  /** The page's landmark, empty when the page starts. */
  readonly main: HTMLElement;
  /** The route's captured parts (a job id, a run id). */
  readonly params: readonly string[];
  /** Runs when the user leaves the page (timers, listeners). */
  onLeave(cleanup: () => void): void;
  /** Announces a short message in the polite live region. */
  say(text: string): void;
  /** Repeats a task while the page is shown and visible, never two at once; a failure is said (not thrown) and the next try clears it. */
  every(ms: number, task: () => Promise<void>): void;
}

export type Page = (context: PageContext) => Promise<void>;

export function heading(context: PageContext, text: string): HTMLHeadingElement {
  document.title = `${text} · Job scheduler`;
  const element = h('h1', { tabindex: '-1' }, text);
  context.main.append(element);
  element.focus();
  return element;
}

/** An error in words; the API's field errors (a 400's `errors`) name what to change. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    const fields = (error.problem.errors ?? []).map((field) => `${field.path}: ${field.message}`);
    return `${error.problem.title ?? 'Error'} (${error.status}): ${error.message}${fields.length > 0 ? `. ${fields.join('; ')}` : ''}`;
  }
  return error instanceof Error ? error.message : String(error);
}

export function alertBox(): HTMLParagraphElement {
  return h('p', { role: 'alert', class: 'error' });
}

/** Runs an action from a button: disabled while it runs, the outcome announced or shown. */
export async function act(button: HTMLButtonElement, alert: HTMLElement, context: PageContext, action: () => Promise<string>): Promise<boolean> {
  button.disabled = true;
  alert.textContent = '';
  try {
    context.say(await action());
    return true;
  } catch (error) {
    alert.textContent = errorText(error);
    return false;
  } finally {
    button.disabled = false;
  }
}

export const STATUS_CLASS = (status: string): string => `badge badge-${status.toLowerCase().replace(/_/g, '-')}`;

/**
 * A listing's reloads: a change of a filter reloads the first page a moment after the last key
 * (`load(false)`), "More" appends the next page (`load(true)`); pending reloads stop with the page.
 */
export function reloadOnChange(
  context: PageContext,
  load: (append: boolean) => Promise<void>,
  more: HTMLButtonElement,
  filters: readonly { readonly control: HTMLElement; readonly event: 'input' | 'change' }[],
): void {
  let debounce = 0;
  const reload = (): void => {
    window.clearTimeout(debounce);
    debounce = window.setTimeout(() => void load(false), 250);
  };
  for (const { control, event } of filters) control.addEventListener(event, reload);
  more.addEventListener('click', () => void load(true));
  context.onLeave(() => window.clearTimeout(debounce));
}

/** What names an element across redraws: its id, its data-key, else its kind, target and words. */
function keyOf(element: Element): string {
  if (element.id) return `#${element.id}`;
  return (
    element.getAttribute('data-key') ??
    [element.tagName, element.getAttribute('href'), element.getAttribute('aria-label'), element.textContent].map((part) => part ?? '').join('|')
  );
}

/**
 * Shows a followed part of a page again with new content, keeping the user's place: the element
 * that had the focus, and each open `<details>`, are found again in the new content by their key.
 */
export function redraw(holder: HTMLElement, ...children: (Node | string)[]): void {
  const active = document.activeElement;
  const focused = active && active !== holder && holder.contains(active) ? keyOf(active) : null;
  const open = new Set([...holder.querySelectorAll('details[open]')].map(keyOf));
  holder.replaceChildren(...children);
  for (const details of holder.querySelectorAll('details')) if (open.has(keyOf(details))) details.open = true;
  if (focused) [...holder.querySelectorAll<HTMLElement>('*')].find((element) => keyOf(element) === focused)?.focus();
}

/** How many rows a followed listing shows at first, and adds with each "More". */
export const FOLLOWED_ROWS = 20;

/**
 * A load that runs one at a time: a call while one is under way runs after it, so that a poll
 * begun before a "More" cannot finish after the load the click asked for and draw fewer rows.
 */
export function oneAtATime(load: () => Promise<void>): () => Promise<void> {
  let last: Promise<void> = Promise.resolve();
  return () => {
    const next = last.then(load, load);
    last = next.catch(() => undefined);
    return next;
  };
}

/**
 * The newest `shown` items of a followed listing (a job's runs, a workflow's runs), read page by
 * page, and whether there are more. Each poll reads them all again from the newest, so that runs
 * arriving meanwhile push older ones down rather than leave a gap between the pages.
 */
export async function newestItems<T>(
  read: (limit: number, cursor?: string) => Promise<{ readonly items: T[]; readonly nextCursor: string | null }>,
  shown: number,
): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await read(Math.min(100, shown - items.length), cursor);
    items.push(...page.items);
    if (page.nextCursor === null) return { items, more: false };
    if (items.length >= shown) return { items, more: true };
    cursor = page.nextCursor;
  }
}

// The web console in a real browser against the local runtime: every flow of issue 18, through
// the pages a user sees, with the API as the only backend.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from '../integration/harness';
import { eventually, jobBody, startScheduler, startTarget } from '../integration/harness';
import { launchChromium, screenshot } from './browser';

const UI_TIMEOUT = 30_000;

let scheduler: Scheduler;
let target: TargetServer;
let failing: TargetServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

async function signIn(key: string): Promise<void> {
  await page.goto(`${scheduler.runtime.url}/console/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Opens a page of the console by its address, signing in first when the tab has no key yet. */
async function visit(hash: string): Promise<void> {
  const address = `${scheduler.runtime.url}/console/${hash}`;
  // Only the hash would change: the browser would not load the page again.
  if (page.url() === address) await page.reload();
  else await page.goto(address);
  const key = page.getByLabel('API key');
  await Promise.race([key.waitFor(), page.getByRole('navigation', { name: 'Main' }).waitFor()]);
  if (await key.isVisible()) {
    await key.fill(scheduler.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }
}

/** An instant's parts in New York, the browser context's zone. */
function newYorkParts(iso: string): Record<string, string> {
  const format = new Intl.DateTimeFormat('en-CA', {
    timeZone: 'America/New_York',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  });
  return Object.fromEntries(format.formatToParts(new Date(iso)).map((part) => [part.type, part.value]));
}

/** An instant as the console shows it to a viewer in New York: `2026-11-23 15:01:05 EST`. */
function newYorkText(iso: string): string {
  const parts = newYorkParts(iso);
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`;
}

/** An instant as a New York viewer's datetime-local value, to the second. */
function newYorkInput(iso: string): string {
  const parts = newYorkParts(iso);
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}`;
}

/** Presses Tab (or Shift+Tab) until the focused element is the one wanted (by its href or its text). */
async function tabTo(tab: Page, wanted: { href?: string; text?: string }, key: 'Tab' | 'Shift+Tab' = 'Tab'): Promise<void> {
  for (let presses = 0; presses < 60; presses++) {
    await tab.keyboard.press(key);
    const focused = await tab.evaluate<{ href: string | null; text: string }>(
      "({ href: document.activeElement?.getAttribute('href') ?? null, text: document.activeElement?.textContent ?? '' })",
    );
    if ((wanted.href === undefined || focused.href === wanted.href) && (wanted.text === undefined || focused.text === wanted.text)) return;
  }
  throw new Error(`Tab never reached ${JSON.stringify(wanted)}`);
}

/** The focused element's href, to check that the keyboard stayed where it was. */
const focusedHref = (tab: Page): Promise<unknown> => tab.evaluate("document.activeElement?.getAttribute('href') ?? document.activeElement?.tagName");

async function createJob(overrides: Record<string, unknown>): Promise<{ jobId: string; name: string }> {
  const response = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, overrides));
  expect(response.status).toBe(201);
  return response.body.job;
}

beforeAll(async () => {
  scheduler = await startScheduler({ workerConcurrency: 2 });
  target = await startTarget();
  failing = await startTarget(() => ({ status: 400, body: '{"error":"bad invoice"}' }));
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, timezoneId: 'America/New_York', locale: 'en-US' });
  context.setDefaultTimeout(UI_TIMEOUT);
  page = await context.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await target?.stop();
  await failing?.stop();
  await scheduler?.stop();
}, 120_000);

describe('the web console', () => {
  it('refuses a wrong key, and after sign-in shows the navigation on every page', async () => {
    await signIn('key_not-a-key-of-anyone-here');
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: UI_TIMEOUT }).toMatch(/not accepted/);
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
    await screenshot(page, 'sign-in');

    await page.getByLabel('API key').fill(scheduler.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const link of ['Jobs', 'Workflows', 'Dead runs', 'Health', 'New job']) await nav.getByRole('link', { name: link, exact: true }).waitFor();
    // The key is kept for the session only, never in the address.
    expect(page.url()).not.toContain(scheduler.apiKey);
    expect(await page.evaluate('sessionStorage.length')).toBe(1);
    for (const link of ['Workflows', 'Dead runs', 'Health', 'New job', 'Jobs']) {
      await nav.getByRole('link', { name: link, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: link }).waitFor();
      expect(await nav.getByRole('link', { name: 'Jobs', exact: true }).isVisible()).toBe(true);
    }
  });

  it('finds a job by a name prefix and a status, and opens it', async () => {
    const cron = { kind: 'cron', expression: '30 2 * * *', timezone: 'Europe/Paris' };
    const invoices = await createJob({ name: 'invoices-nightly', type: 'billing', schedule: cron, labels: { team: 'billing' } });
    await createJob({ name: 'reports-weekly', type: 'reports', schedule: { kind: 'cron', expression: '0 9 * * MON', timezone: 'UTC' } });
    await createJob({ name: 'invoices-eu', type: 'billing', schedule: { kind: 'delay', seconds: 3600 } });
    await visit('#/jobs');
    const table = page.getByRole('table', { name: /Jobs/ });
    await table.getByRole('link', { name: 'reports-weekly' }).waitFor();
    await screenshot(page, 'jobs');

    await page.getByLabel('Search jobs').fill('invoices-n');
    await expect.poll(() => table.getByRole('link').allTextContents(), { timeout: UI_TIMEOUT }).toEqual(['invoices-nightly']);
    // The schedule in words with its zone.
    expect(await table.textContent()).toContain('Europe/Paris');
    await page.getByLabel('Search jobs').fill('invoices');
    await expect.poll(() => table.getByRole('link', { name: /^invoices/ }).count(), { timeout: UI_TIMEOUT }).toBe(2);
    // Labels, typed key by key: the API finds them by its label index. A half-typed one (no "=" yet)
    // is not sent; the field says why, and the list stays as it was.
    const label = page.getByLabel('Label');
    // The page's alert (hidden while empty).
    const alert = page.locator('main [role="alert"]');
    await label.pressSequentially('team', { delay: 30 });
    await expect.poll(() => page.locator('#label-filter-error').textContent(), { timeout: UI_TIMEOUT }).toMatch(/key=value/);
    expect(await label.getAttribute('aria-invalid')).toBe('true');
    expect(await alert.textContent()).toBe('');
    await label.pressSequentially('=billing', { delay: 30 });
    await expect.poll(() => table.getByRole('link').allTextContents(), { timeout: UI_TIMEOUT }).toEqual(['invoices-nightly']);
    expect(await page.locator('#label-filter-error').textContent()).toBe('');
    await label.press('ControlOrMeta+a');
    await label.pressSequentially('team=nobody', { delay: 30 });
    await page.getByText('No jobs match.').waitFor();
    // A label the API refuses: its 400 is shown with the field's own message.
    await label.press('ControlOrMeta+a');
    await label.pressSequentially('my team=billing', { delay: 30 });
    await expect.poll(() => alert.textContent(), { timeout: UI_TIMEOUT }).toMatch(/^Invalid request \(400\): .*label: must be key=value/);
    await label.press('ControlOrMeta+a');
    await label.press('Backspace');
    await expect.poll(() => table.getByRole('link', { name: /^invoices/ }).count(), { timeout: UI_TIMEOUT }).toBe(2);
    // So is a name prefix over the API's 128 characters; the filters stay the API's afterwards.
    await page.getByLabel('Search jobs').fill('i'.repeat(129));
    await expect.poll(() => alert.textContent(), { timeout: UI_TIMEOUT }).toMatch(/namePrefix: /);
    await page.getByLabel('Search jobs').fill('invoices');
    await label.pressSequentially('team=billing', { delay: 30 });
    await expect.poll(() => table.getByRole('link').allTextContents(), { timeout: UI_TIMEOUT }).toEqual(['invoices-nightly']);
    expect(await alert.textContent()).toBe('');
    await label.press('ControlOrMeta+a');
    await label.press('Backspace');
    await expect.poll(() => table.getByRole('link', { name: /^invoices/ }).count(), { timeout: UI_TIMEOUT }).toBe(2);
    await page.getByLabel('Status').selectOption('PAUSED');
    await page.getByText('No jobs match.').waitFor();
    await page.getByLabel('Status').selectOption('ACTIVE');
    // A job created without a name is named by its id: the search box finds it by its whole id.
    const unnamed = await createJob({ name: undefined, type: 'billing', schedule: { kind: 'delay', seconds: 3600 } });
    await page.getByLabel('Search jobs').fill(unnamed.jobId);
    await expect.poll(() => table.getByRole('link').allTextContents(), { timeout: UI_TIMEOUT }).toEqual([unnamed.jobId]);
    await page.getByLabel('Search jobs').fill('invoices-n');
    await table.getByRole('link', { name: 'invoices-nightly' }).click();
    await page.getByRole('heading', { level: 1, name: 'Job invoices-nightly' }).waitFor();
    expect(page.url()).toContain(invoices.jobId);
    // Next fire times in the job's zone and the viewer's.
    const fireTimes = page.getByRole('table', { name: /In the job's zone \(Europe\/Paris\) and yours \(America\/New_York\)/ });
    await fireTimes.waitFor();
    expect(await fireTimes.locator('tbody tr').count()).toBe(5);
    expect(await fireTimes.locator('tbody tr').first().textContent()).toMatch(/02:30:00 GMT\+1.*(EST|GMT-5)/);
  });

  it('follows a run from queued to succeeded without a reload, and pauses, resumes and triggers the job', async () => {
    // Queued for 15 s: time enough for the page to load and show it on a loaded machine.
    const job = await createJob({ name: 'follow-me', schedule: { kind: 'delay', seconds: 15 } });
    await visit(`#/jobs/${job.jobId}`);
    await page.getByRole('heading', { level: 1, name: 'Job follow-me' }).waitFor();
    await page.evaluate('window.notReloaded = true');
    const runs = page.locator('#runs-table');
    await expect.poll(() => runs.locator('[data-run-status]').first().textContent(), { timeout: UI_TIMEOUT }).toBe('queued');
    // Its link names it in the viewer's time, as the table shows it.
    const queued = (await scheduler.api('GET', `/v1/jobs/${job.jobId}/runs`)).body.items[0];
    expect(await runs.getByRole('link').first().getAttribute('aria-label')).toBe(`Run scheduled for ${newYorkText(queued.scheduledFor)}, attempt 1`);
    await expect.poll(() => runs.locator('[data-run-status]').first().textContent(), { timeout: 60_000 }).toBe('succeeded');
    expect(await page.evaluate('window.notReloaded')).toBe(true);
    expect(target.calls.length).toBeGreaterThanOrEqual(1);

    const cron = await createJob({
      name: 'pausable',
      schedule: { kind: 'cron', expression: '*/5 * * * *', timezone: 'Asia/Tokyo' },
      notify: { events: ['dead', 'skipped'], destination: { kind: 'http', url: 'https://example.com/ops' } },
    });
    await visit(`#/jobs/${cron.jobId}`);
    await expect.poll(() => page.locator('dl.definition').textContent(), { timeout: UI_TIMEOUT }).toContain('dead, skipped to https://example.com/ops');
    // Skip the next occurrence from its row: it shows as skipped, and the job's chain passes it.
    const nextFire = (await scheduler.api('GET', `/v1/jobs/${cron.jobId}`)).body.nextRunAt as string;
    await page.getByRole('button', { name: `Skip the occurrence at ${newYorkText(nextFire)}` }).click();
    await expect.poll(() => page.locator('#fire-times tbody tr').first().textContent(), { timeout: UI_TIMEOUT }).toContain('Skipped: skipped on request');
    expect((await scheduler.api('GET', `/v1/jobs/${cron.jobId}`)).body.skippedOccurrences).toEqual([nextFire]);
    // Pause with a note: the job shows it until it resumes.
    await page.getByLabel('Note', { exact: true }).fill('supplier down, INC-2231');
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await expect.poll(() => page.locator('#job-status').textContent(), { timeout: UI_TIMEOUT }).toBe('paused');
    await expect.poll(() => page.locator('#pause-note').textContent(), { timeout: UI_TIMEOUT }).toBe('supplier down, INC-2231');
    expect((await scheduler.api('GET', `/v1/jobs/${cron.jobId}`)).body).toMatchObject({ status: 'PAUSED', pauseNote: 'supplier down, INC-2231' });
    await page.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => page.locator('#job-status').textContent(), { timeout: UI_TIMEOUT }).toBe('active');
    expect((await scheduler.api('GET', `/v1/jobs/${cron.jobId}`)).body.status).toBe('ACTIVE');

    const before = target.calls.length;
    await page.getByRole('button', { name: 'Trigger now' }).click();
    await expect.poll(() => page.locator('#runs-table [data-run-status]').allTextContents(), { timeout: 60_000 }).toContain('succeeded');
    expect(target.calls.length).toBeGreaterThan(before);
    await screenshot(page, 'job');

    await page.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('Delete job pausable?');
    await dialog.getByRole('button', { name: 'Delete job' }).click();
    await expect.poll(() => page.locator('#job-status').textContent(), { timeout: UI_TIMEOUT }).toBe('cancelled');
    expect((await scheduler.api('GET', `/v1/jobs/${cron.jobId}`)).body.status).toBe('CANCELLED');
  });

  it('keeps the keyboard where it was when a followed page shows new data: the job, run and workflow run pages', async () => {
    // The job page's runs: a link keeps the focus while its run goes from queued to succeeded.
    const job = await createJob({ name: 'focus-job', schedule: { kind: 'delay', seconds: 8 } });
    const runId = (job as unknown as { nextRunId: string }).nextRunId;
    const runLink = `#/runs/${encodeURIComponent(runId)}`;
    await visit(`#/jobs/${job.jobId}`);
    await expect.poll(() => page.locator('#runs-table [data-run-status]').first().textContent(), { timeout: UI_TIMEOUT }).toBe('queued');
    await tabTo(page, { href: runLink });
    await expect.poll(() => page.locator('#runs-table [data-run-status]').first().textContent(), { timeout: 60_000 }).toBe('succeeded');
    expect(await focusedHref(page)).toBe(runLink);

    // A run's page: its job's link keeps the focus as the run ends.
    const other = await createJob({ name: 'focus-run', schedule: { kind: 'delay', seconds: 8 } });
    const otherRun = (other as unknown as { nextRunId: string }).nextRunId;
    await visit(`#/runs/${otherRun}`);
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('queued');
    await tabTo(page, { href: `#/jobs/${other.jobId}` });
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 60_000 }).toBe('succeeded');
    expect(await focusedHref(page)).toBe(`#/jobs/${other.jobId}`);

    // A workflow run's page: its workflow's link keeps the focus while a slow step finishes.
    const slow = await startTarget(async () => {
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      return { status: 200 };
    });
    try {
      const created = await scheduler.api('POST', '/v1/workflows', { name: 'focus-flow', steps: [{ id: 'slow', target: { kind: 'http', url: slow.url } }] });
      expect(created.status).toBe(201);
      const workflowId = created.body.workflowId as string;
      const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
      await visit(`#/workflows/${workflowId}/runs/${started.body.workflowRunId}`);
      await expect.poll(() => page.locator('#workflow-run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('running');
      await tabTo(page, { href: `#/workflows/${workflowId}` });
      await expect.poll(() => page.locator('#workflow-run-status').textContent(), { timeout: 60_000 }).toBe('succeeded');
      expect(await focusedHref(page)).toBe(`#/workflows/${workflowId}`);
    } finally {
      await slow.stop();
    }
  });

  it('says when a followed page cannot refresh, and keeps trying, with no unhandled error', async () => {
    const errors: Error[] = [];
    const onError = (error: Error): void => void errors.push(error);
    page.on('pageerror', onError);
    try {
      const job = await createJob({ name: 'refresh-fails', schedule: { kind: 'cron', expression: '0 6 * * *', timezone: 'UTC' } });
      await visit(`#/jobs/${job.jobId}`);
      await page.getByRole('heading', { level: 1, name: 'Job refresh-fails' }).waitFor();
      const refreshStatus = page.locator('#refresh-status');
      await page.route('**/v1/jobs/*/runs?*', (route) => route.fulfill({ status: 503, body: '' }));
      await expect
        .poll(() => refreshStatus.textContent(), { timeout: UI_TIMEOUT })
        .toBe("Couldn't refresh (Service Unavailable (503): HTTP 503); retrying every 2 s.");
      await page.unroute('**/v1/jobs/*/runs?*');
      await expect.poll(() => refreshStatus.textContent(), { timeout: UI_TIMEOUT }).toBe('');

      const created = await scheduler.api('POST', '/v1/workflows', {
        name: 'refresh-flow',
        steps: [{ id: 'only', target: { kind: 'http', url: target.url } }],
      });
      const workflowId = created.body.workflowId as string;
      const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
      await visit(`#/workflows/${workflowId}/runs/${started.body.workflowRunId}`);
      await expect.poll(() => page.locator('#workflow-run-status').textContent(), { timeout: 60_000 }).toBe('succeeded');
      await page.route(`**/v1/workflows/${workflowId}/runs/**`, (route) => route.abort());
      await expect.poll(() => refreshStatus.textContent(), { timeout: UI_TIMEOUT }).toMatch(/^Couldn't refresh \(.+\); retrying every 2 s\.$/);
      await page.unroute(`**/v1/workflows/${workflowId}/runs/**`);
      await expect.poll(() => refreshStatus.textContent(), { timeout: UI_TIMEOUT }).toBe('');
      expect(errors).toEqual([]);
    } finally {
      page.off('pageerror', onError);
    }
  });

  it("shows a job's last run, not an occurrence skipped ahead of its time", async () => {
    const job = await createJob({ name: 'last-run-shown', schedule: { kind: 'cron', expression: '0 * * * *', timezone: 'UTC' } });
    const triggered = await scheduler.api('POST', `/v1/jobs/${job.jobId}/trigger`);
    await eventually(
      () => scheduler.api('GET', `/v1/runs/${triggered.body.run.runId}`),
      (response) => response.body.status === 'SUCCEEDED',
      60_000,
    );
    // The next occurrence skipped: recorded now as an ended SKIPPED run, due later.
    expect((await scheduler.api('POST', `/v1/jobs/${job.jobId}/skip`, { next: 1 })).status).toBe(200);
    await visit('#/jobs');
    await page.getByLabel('Search jobs').fill('last-run-shown');
    const lastRun = page.locator(`[data-last-run="${job.jobId}"]`);
    await expect.poll(() => lastRun.textContent(), { timeout: UI_TIMEOUT }).toBe('succeeded');
    expect(await lastRun.getByRole('link').getAttribute('href')).toBe(`#/runs/${triggered.body.run.runId}`);
  });

  it("shows a job's runs twenty at a time, the older ones on request", async () => {
    const job = await createJob({ name: 'many-runs', schedule: { kind: 'delay', seconds: 3600 } });
    for (let i = 0; i < 21; i++) expect((await scheduler.api('POST', `/v1/jobs/${job.jobId}/trigger`)).status).toBe(202);
    await visit(`#/jobs/${job.jobId}`);
    const rows = page.locator('#runs tbody tr');
    // 22 runs: the delayed occurrence and the 21 triggered.
    await expect.poll(() => rows.count(), { timeout: UI_TIMEOUT }).toBe(20);
    // Before, the page showed the 20 newest and nothing said there were more.
    const more = page.getByRole('button', { name: 'More runs' });
    await more.click();
    await expect.poll(() => rows.count(), { timeout: UI_TIMEOUT }).toBe(22);
    expect(await more.isHidden()).toBe(true);
  });

  it('answers an address whose escapes do not decode with a page that says so, not a blank one', async () => {
    await visit('#/jobs/%E0');
    // Before, decoding the address threw after the header was drawn, and the page stayed empty.
    await expect.poll(() => page.locator('main').textContent(), { timeout: UI_TIMEOUT }).toMatch(/\S/);
    expect(await page.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(true);
  });

  it('asks before cancelling a run or a workflow run', async () => {
    const job = await createJob({ name: 'cancel-asks', schedule: { kind: 'delay', seconds: 600 } });
    const runId = (job as unknown as { nextRunId: string }).nextRunId;
    await visit(`#/runs/${runId}`);
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('queued');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain(`Cancel run ${runId}?`);
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('QUEUED');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('cancelled');

    const slow = await startTarget(async () => {
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      return { status: 200 };
    });
    try {
      const created = await scheduler.api('POST', '/v1/workflows', {
        name: 'cancel-asks-flow',
        steps: [{ id: 'slow', target: { kind: 'http', url: slow.url } }],
      });
      const workflowId = created.body.workflowId as string;
      const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
      await visit(`#/workflows/${workflowId}/runs/${started.body.workflowRunId}`);
      await expect.poll(() => page.locator('#workflow-run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('running');
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      expect(await dialog.textContent()).toContain(`Cancel workflow run ${started.body.workflowRunId}?`);
      await dialog.getByRole('button', { name: 'Cancel workflow run' }).click();
      await expect.poll(() => page.locator('#workflow-run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('cancelled');
    } finally {
      await slow.stop();
    }
  });

  it("keeps a paused job's end when its pause changes, says it is paused instead of offering fire times, and reads a new end in the viewer's zone", async () => {
    const job = await createJob({ name: 'paused-till', schedule: { kind: 'cron', expression: '*/5 * * * *', timezone: 'UTC' } });
    // Seconds in it: the field shows them (Chromium leaves out :00).
    const until = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 3 * 86_400_000 + 17_000).toISOString();
    expect((await scheduler.api('POST', `/v1/jobs/${job.jobId}/pause`, { note: 'maintenance', until })).status).toBe(200);
    await visit(`#/jobs/${job.jobId}`);
    await page.getByRole('heading', { level: 1, name: 'Job paused-till' }).waitFor();
    // No fire times to skip: the job says it is paused, and until when, in the viewer's time.
    const next = page.getByRole('region', { name: 'Next fire times' });
    await expect.poll(() => next.textContent(), { timeout: UI_TIMEOUT }).toContain(`resumes by itself at ${newYorkText(until)}`);
    expect(await next.getByRole('table').count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Skip/ }).count()).toBe(0);
    // The form shows the pause as it is: its end in the viewer's wall time, the zone named.
    const untilField = page.getByLabel('Resume at (your time, America/New_York)');
    expect(await untilField.inputValue()).toBe(newYorkInput(until));
    expect(await page.getByLabel('No end').isChecked()).toBe(false);
    // A new note keeps the end.
    await page.getByLabel('Note', { exact: true }).fill('maintenance, longer');
    await page.getByRole('button', { name: 'Change pause' }).click();
    await expect.poll(() => page.locator('#pause-note').textContent(), { timeout: UI_TIMEOUT }).toBe('maintenance, longer');
    expect((await scheduler.api('GET', `/v1/jobs/${job.jobId}`)).body).toMatchObject({ status: 'PAUSED', pausedUntil: until });
    // No end is a choice of its own.
    await page.getByLabel('No end').check();
    await page.getByRole('button', { name: 'Change pause' }).click();
    await expect.poll(() => next.textContent(), { timeout: UI_TIMEOUT }).toContain('no end to its pause');
    expect((await scheduler.api('GET', `/v1/jobs/${job.jobId}`)).body.pausedUntil ?? null).toBeNull();
    // A typed end is read in the viewer's zone (New York here).
    const later = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 2 * 86_400_000).toISOString();
    await page.getByLabel('Resume at (your time, America/New_York)').fill(newYorkInput(later));
    expect(await page.getByLabel('No end').isChecked()).toBe(false);
    await page.getByRole('button', { name: 'Change pause' }).click();
    await expect.poll(() => next.textContent(), { timeout: UI_TIMEOUT }).toContain(`resumes by itself at ${newYorkText(later)}`);
    expect((await scheduler.api('GET', `/v1/jobs/${job.jobId}`)).body.pausedUntil).toBe(later);
  });

  it("creates a cron job through the form, with the preview following the expression and zone, and the API's errors beside the fields", async () => {
    await visit('#/new');
    await page.getByRole('heading', { level: 1, name: 'New job' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('from-the-form');
    await page.getByLabel('Type', { exact: true }).fill('forms');
    await page.getByLabel('Cron expression').fill('0 12 * * *');
    await page.getByLabel('Time zone').fill('Asia/Kolkata');
    const preview = page.getByRole('list', { name: 'Next fire times' });
    await expect.poll(async () => (await preview.textContent()) ?? '', { timeout: UI_TIMEOUT }).toMatch(/12:00:00 GMT\+5:30/);
    expect(await preview.getByRole('listitem').count()).toBe(5);
    await page.getByLabel('Time zone').fill('Europe/Berlin');
    await expect.poll(async () => (await preview.textContent()) ?? '', { timeout: UI_TIMEOUT }).toMatch(/12:00:00 GMT\+1/);

    // The API's own validation error, beside the field it names.
    await page.getByLabel('Cron expression').fill('0 24 * * *');
    const expressionError = page.locator('[data-field="schedule.expression"] .field-error');
    await expect.poll(async () => (await expressionError.textContent()) ?? '', { timeout: UI_TIMEOUT }).toMatch(/hour/i);
    await page.getByLabel('Cron expression').fill('0 12 * * *');
    await expect.poll(async () => (await preview.textContent()) ?? '', { timeout: UI_TIMEOUT }).toMatch(/12:00:00 GMT\+1/);
    expect(await expressionError.textContent()).toBe('');
    await page.getByLabel('Target URL').fill('ftp://nowhere');
    await page.getByRole('button', { name: 'Create job' }).click();
    await expect.poll(async () => (await page.locator('[data-field="target.url"] .field-error').textContent()) ?? '', { timeout: UI_TIMEOUT }).not.toBe('');
    expect(await page.getByLabel('Target URL').getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'new-job');

    await page.getByLabel('Target URL').fill(target.url);
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.getByRole('heading', { level: 1, name: 'Job from-the-form' }).waitFor();
    const listed = await scheduler.api('GET', '/v1/jobs?limit=100');
    const created = listed.body.items.find((job: { name: string }) => job.name === 'from-the-form');
    expect(created.schedule).toEqual({ kind: 'cron', expression: '0 12 * * *', timezone: 'Europe/Berlin' });

    // Without a name the job is named by its id (decision 0154).
    await visit('#/new');
    await page.getByRole('heading', { level: 1, name: 'New job' }).waitFor();
    await page.getByLabel('Type', { exact: true }).fill('forms');
    await page.getByLabel('Cron expression').fill('0 12 * * *');
    await page.getByLabel('Target URL').fill(target.url);
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.getByRole('heading', { level: 1, name: /^Job job_[0-9a-z]{26}$/ }).waitFor();
  });

  it('replays a dead run from the dead runs page, one and the selected ones after a confirmation that says how many', async () => {
    const dead = await Promise.all(
      ['dead-a', 'dead-b', 'dead-c'].map((name) =>
        scheduler.api('POST', '/v1/jobs', jobBody(failing.url, { name, retryPolicy: { maxAttempts: 1, initialDelaySeconds: 1, maxDelaySeconds: 1 } })),
      ),
    );
    const jobIds = dead.map((response) => response.body.job.jobId as string);
    await eventually(
      () => scheduler.api('GET', '/v1/dead-runs?limit=100'),
      (response) => response.body.items.length === 3,
      60_000,
    );

    await visit('#/dead');
    const table = page.getByRole('table', { name: /Dead runs/ });
    await expect.poll(() => table.locator('tbody tr').count(), { timeout: UI_TIMEOUT }).toBe(3);
    await screenshot(page, 'dead-runs');
    const rows = await scheduler.api('GET', '/v1/dead-runs?limit=100');
    const [first, second, third] = rows.body.items.map((run: { runId: string }) => run.runId);

    await page.getByRole('button', { name: `Replay run ${first}` }).click();
    await expect.poll(() => table.locator('tbody tr').count(), { timeout: UI_TIMEOUT }).toBe(2);

    await page.getByRole('checkbox', { name: `Select run ${second}` }).check();
    await page.getByRole('checkbox', { name: `Select run ${third}` }).check();
    await page.getByRole('button', { name: 'Replay selected (2)' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('Replay 2 dead runs?');
    await dialog.getByRole('button', { name: 'Replay 2' }).click();
    await page.getByText('No dead runs.').waitFor();

    // Each was replayed once: a replay run of its occurrence exists for every job.
    for (const jobId of jobIds) {
      const runs = await scheduler.api('GET', `/v1/jobs/${jobId}/runs`);
      expect(runs.body.items.filter((run: { trigger: string }) => run.trigger === 'replay')).toHaveLength(1);
    }
  });

  it('shows a run: its timeline, error, lease, fencing token and delivery, and Replay when it is dead', async () => {
    const response = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(failing.url, { name: 'dead-to-view', retryPolicy: { maxAttempts: 1, initialDelaySeconds: 1, maxDelaySeconds: 1 } }),
    );
    const jobId = response.body.job.jobId as string;
    const deadRun = await eventually(
      () => scheduler.api('GET', `/v1/jobs/${jobId}/runs`),
      (runs) => runs.body.items[0]?.status === 'DEAD',
      60_000,
    );
    const run = deadRun.body.items[0];
    await visit(`#/runs/${run.runId}`);
    await page.getByRole('heading', { level: 1, name: `Run ${run.runId}` }).waitFor();
    const timeline = page.getByRole('list', { name: 'Timeline' });
    await timeline.waitFor();
    expect(await timeline.getByRole('listitem').count()).toBe(4);
    expect(await timeline.textContent()).toContain('Outcome: dead');
    expect(await timeline.getByRole('listitem').nth(1).textContent()).toContain(`due ${newYorkText(run.availableAt)}`);
    // Each fact is the run's own, as GET /v1/runs/{id} has it.
    const fact = async (term: string): Promise<string | null> => page.locator(`dl.definition dt:text-is("${term}") + dd`).textContent();
    expect(await fact('Status')).toBe('dead');
    expect(await fact('Job')).toBe(jobId);
    expect(await fact('Scheduled for')).toBe(newYorkText(run.scheduledFor));
    expect(await fact('Attempt')).toBe(String(run.attempt));
    expect(await fact('Error')).toBe(`${run.error.code}: ${run.error.message} (permanent)`);
    expect(run.error.code).toBe('HTTP_400');
    expect(await fact('Lease owner')).toBe(run.leaseOwner ?? '—');
    expect(await fact('Lease expires')).toBe(run.leaseExpiresAt ? newYorkText(run.leaseExpiresAt) : '—');
    expect(await fact('Fencing token')).toBe(`${1_000_000 + run.version} (version ${run.version})`);
    expect(await fact('Delivery')).toBe('at-least-once');
    expect(await fact('Idempotency key')).toBe(run.idempotencyKey);
    expect(await page.getByRole('button', { name: 'Cancel' }).isVisible()).toBe(false);
    await screenshot(page, 'run');
    await page.getByRole('button', { name: 'Replay' }).click();
    await page.waitForURL(/#\/runs\//);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), { timeout: UI_TIMEOUT }).not.toBe(`Run ${run.runId}`);
    expect(await page.getByRole('list', { name: 'Timeline' }).textContent()).toContain('trigger: replay');
  });

  it('shows the health charts, queue depths and the ticker in the figures of GET /v1/health, and refreshes without closing what is open', async () => {
    await scheduler.runtime.tickNow();
    await visit('#/health');
    await page.getByRole('heading', { level: 2, name: /^status: (ok|degraded)$/ }).waitFor();
    for (const name of ['Start lag p50 and p99 per minute', 'Runs per minute', 'Success rate per minute']) {
      const figure = page.getByRole('figure', { name });
      await figure.locator('canvas').waitFor();
    }
    // The page's figures are the API's: read both until no run ends between the two reads.
    const figure = async (term: string): Promise<string> => (await page.locator(`dl.definition dt:text-is("${term}") + dd`).textContent()) ?? '';
    const shown = async () => ({ started: await figure('started'), retried: await figure('retried'), successRate: await figure('successRate') });
    const reported = async () => {
      const { runs } = (await scheduler.api('GET', '/v1/health?minutes=60')).body;
      return {
        started: String(runs.started),
        retried: String(runs.retried),
        successRate: runs.successRate === null ? '— (no outcomes)' : `${runs.successRate} %`,
      };
    };
    await expect.poll(async () => JSON.stringify(await shown()) === JSON.stringify(await reported()), { timeout: UI_TIMEOUT }).toBe(true);
    const { queues } = (await scheduler.api('GET', '/v1/health?minutes=60')).body;
    const standard = queues.pools.default.standard;
    const standardRow = page
      .getByRole('table', { name: 'Queue depths by pool and lane' })
      .locator('tbody tr')
      .filter({ hasText: /^defaultstandard/ });
    expect(await standardRow.locator('td').allTextContents()).toEqual([
      'default',
      'standard',
      String(standard.visible),
      String(standard.inFlight),
      String(standard.delayed),
      standard.oldestMessageAgeSeconds === null ? '—' : `${standard.oldestMessageAgeSeconds} s`,
    ]);
    expect(await page.locator('#ticker-last').textContent()).toMatch(/lastCompletedAt: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d (EST|GMT-5) \(\d+ s ago\)/);
    await screenshot(page, 'health');

    // Open a chart's figures and keep the keyboard on them while new runs change the page.
    const summary = page.getByRole('figure', { name: 'Runs per minute' }).locator('summary');
    await summary.click();
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Runs per minute: figures');
    const cdp = await context.newCDPSession(page);
    // Each uPlot listens on the window until it is destroyed.
    const chartListeners = async (): Promise<number> => {
      const { result } = await cdp.send('Runtime.evaluate', { expression: 'window' });
      const { listeners } = await cdp.send('DOMDebugger.getEventListeners', { objectId: result.objectId! });
      return listeners.filter((listener) => listener.type === 'dppxchange').length;
    };
    const before = await chartListeners();
    const started = Number(await figure('started'));
    await createJob({ name: 'health-moves' });
    await expect.poll(async () => Number(await figure('started')), { timeout: 60_000 }).toBeGreaterThan(started);
    expect(await page.getByRole('figure', { name: 'Runs per minute' }).locator('details').getAttribute('open')).not.toBeNull();
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Runs per minute: figures');
    await page.getByRole('figure', { name: 'Success rate per minute' }).locator('canvas').waitFor();
    expect(await chartListeners()).toBe(before);
    await cdp.detach();
  });

  it('is usable by keyboard: sign in, move through the navigation, act on a job', async () => {
    const keyboard = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    keyboard.setDefaultTimeout(UI_TIMEOUT);
    const tab = await keyboard.newPage();
    await tab.goto(`${scheduler.runtime.url}/console/`);
    // The key field has the focus on arrival.
    await tab.keyboard.type(scheduler.apiKey);
    await tab.keyboard.press('Enter');
    await tab.getByRole('heading', { level: 1, name: 'Jobs' }).waitFor();
    const focusedText = () => tab.evaluate('document.activeElement && document.activeElement.textContent');
    let found = false;
    // The page's heading has the focus after each navigation; the navigation comes before it.
    for (let presses = 0; presses < 12 && !found; presses++) {
      await tab.keyboard.press('Shift+Tab');
      found = (await focusedText()) === 'Health';
    }
    expect(found).toBe(true);
    await tab.keyboard.press('Enter');
    await tab.getByRole('heading', { level: 1, name: 'Health' }).waitFor();

    const job = await createJob({ name: 'by-keyboard', schedule: { kind: 'cron', expression: '0 6 * * *', timezone: 'UTC' } });
    await tab.goto(`${scheduler.runtime.url}/console/#/jobs/${job.jobId}`);
    await tab.getByRole('heading', { level: 1, name: 'Job by-keyboard' }).waitFor();
    // The skip link, first on the page, moves the focus to the page and leaves the route as it is.
    await tabTo(tab, { text: 'Skip to content' }, 'Shift+Tab');
    await tab.keyboard.press('Enter');
    await expect.poll(() => tab.evaluate('document.activeElement.id'), { timeout: UI_TIMEOUT }).toBe('main');
    expect(new URL(tab.url()).hash).toBe(`#/jobs/${job.jobId}`);
    await tabTo(tab, { text: 'Pause' });
    await tab.keyboard.press('Enter');
    await expect.poll(() => tab.locator('#job-status').textContent(), { timeout: UI_TIMEOUT }).toBe('paused');
    // The focus stays with the actions: Enter again resumes.
    await expect.poll(focusedText, { timeout: UI_TIMEOUT }).toBe('Resume');
    await tab.keyboard.press('Enter');
    await expect.poll(() => tab.locator('#job-status').textContent(), { timeout: UI_TIMEOUT }).toBe('active');
    await keyboard.close();
  });

  it('is readable at a phone width: no sideways scrolling, the navigation and tables on screen', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, timezoneId: 'Europe/London' });
    phone.setDefaultTimeout(UI_TIMEOUT);
    const small = await phone.newPage();
    await small.goto(`${scheduler.runtime.url}/console/`);
    await small.getByLabel('API key').fill(scheduler.apiKey);
    await small.keyboard.press('Enter');
    await small.getByRole('table', { name: /Jobs/ }).waitFor();
    expect(await small.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    expect(await small.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Health' }).isVisible()).toBe(true);
    await screenshot(small, 'jobs-phone');
    await phone.close();
  });
  /** Waits for the page's `event` notification to show dead, lets its destination accept, sends it again and waits for it to be sent. */
  async function sendAgain(event: string, accept: () => void): Promise<void> {
    const status = page.locator(`#notifications-table [data-notification-status="${event}"]`);
    await expect.poll(() => status.textContent(), { timeout: UI_TIMEOUT }).toBe('dead');
    accept();
    await page.getByRole('button', { name: 'Send again' }).click();
    await expect.poll(() => status.textContent(), { timeout: 60_000 }).toBe('sent');
  }

  it('shows a workflow run as a graph of its steps coloured by status, and retries it from its failed step', async () => {
    let failFirst = true;
    let hooks: TargetServer | undefined;
    const flaky = await startTarget(() => {
      if (!failFirst) return { status: 200 };
      failFirst = false;
      return { status: 500, headers: { 'x-retryable': 'false' } };
    });
    try {
      const steps = [
        { id: 'extract', target: { kind: 'http', url: target.url } },
        { id: 'transform', target: { kind: 'http', url: flaky.url }, dependsOn: ['extract'], retryPolicy: { maxAttempts: 1 } },
        { id: 'report', target: { kind: 'http', url: target.url }, dependsOn: ['extract'] },
        { id: 'load', target: { kind: 'http', url: target.url }, dependsOn: ['transform', 'report'] },
      ];
      // Its failed end's notification is refused (DEAD) until the page sends it again.
      let refuse = true;
      hooks = await startTarget(() => ({ status: refuse ? 400 : 200 }));
      const notify = { events: ['failed'], destination: { kind: 'http', url: hooks.url } };
      const created = await scheduler.api('POST', '/v1/workflows', { name: 'console-diamond', steps, notify });
      expect(created.status).toBe(201);
      const workflowId = created.body.workflowId as string;
      await visit(`#/workflows/${workflowId}`);
      await page.getByRole('button', { name: 'Start a run' }).click();
      await expect.poll(() => page.locator('#workflow-run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('failed');
      const graph = page.getByRole('group', { name: 'Steps' });
      const stepClass = (id: string) => graph.locator(`[data-step="${id}"]`).getAttribute('class');
      expect(await stepClass('extract')).toContain('badge-succeeded');
      expect(await stepClass('transform')).toContain('badge-dead');
      expect(await stepClass('load')).toContain('badge-not-started');
      expect(await graph.locator('[data-step="load"]').textContent()).toContain('dependency transform ended DEAD');
      await screenshot(page, 'workflow-run-failed');
      await sendAgain('failed', () => (refuse = false));
      expect(hooks.calls).toHaveLength(2);

      await page.getByRole('button', { name: 'Retry failed steps' }).click();
      await expect.poll(() => page.locator('#workflow-run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('succeeded');
      expect(await stepClass('load')).toContain('badge-succeeded');
      expect(await graph.locator('[data-step="transform"]').textContent()).toContain('attempt 2');

      // A step's run page: its status, its workflow, and both attempts of its occurrence (its job
      // is the step's, which no job route serves: the page stopped at a 404 before).
      // The tenant's runs at the step's instant come a page at a time: one run a page here, so the
      // attempts are found only by following the cursor.
      await page.route('**/v1/runs?*', (route) =>
        route.continue({
          url: route
            .request()
            .url()
            .replace(/limit=100\b/, 'limit=1'),
        }),
      );
      await graph.locator('[data-step="transform"]').getByRole('link', { name: 'transform' }).click();
      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('succeeded');
      const attempts = page.getByRole('region', { name: 'Attempts of this occurrence' }).locator('li');
      expect(await attempts.allTextContents()).toEqual(['Attempt 1 dead (manual)', 'Attempt 2 (this run) succeeded (replay)']);
      expect(await page.getByRole('link', { name: /\.transform$/ }).getAttribute('href')).toBe(`#/workflows/${workflowId}`);
    } finally {
      await page.unroute('**/v1/runs?*');
      await flaky.stop();
      await hooks?.stop();
    }
  });

  it("shows a run's notifications, and sends a dead one again", async () => {
    let refuse = true;
    const hooks = await startTarget(() => ({ status: refuse ? 400 : 200 }));
    try {
      const job = await createJob({ name: 'console-notified', notify: { events: ['succeeded'], destination: { kind: 'http', url: hooks.url } } });
      const runId = (job as unknown as { nextRunId: string }).nextRunId;
      await eventually(
        () => scheduler.deps.notifications.get(runId, 'succeeded'),
        (record) => record?.status === 'DEAD',
        60_000,
      );
      await visit(`#/runs/${runId}`);
      await sendAgain('succeeded', () => (refuse = false));
      expect(hooks.calls).toHaveLength(2);
    } finally {
      await hooks.stop();
    }
  });

  it("links a dead workflow step's run on the dead runs page to its workflow run", async () => {
    const steps = [{ id: 'refused', target: { kind: 'http', url: failing.url }, retryPolicy: { maxAttempts: 1 } }];
    const created = await scheduler.api('POST', '/v1/workflows', { name: 'dead-step', steps });
    expect(created.status).toBe(201);
    const workflowId = created.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    const workflowRunId = started.body.workflowRunId as string;
    await eventually(
      () => scheduler.api('GET', '/v1/dead-runs?limit=100'),
      (response) => response.body.items.some((run: { jobId: string }) => run.jobId.startsWith(`${workflowId}.`)),
      60_000,
    );
    await visit('#/dead');
    const link = page.getByRole('table', { name: /Dead runs/ }).getByRole('link', { name: `${workflowId}.v1.refused` });
    expect(await link.getAttribute('href')).toBe(`#/workflows/${workflowId}/runs/${workflowRunId}`);
    await link.click();
    await expect.poll(() => page.locator('#workflow-run-status').textContent(), { timeout: UI_TIMEOUT }).toBe('failed');
  });

  it('lists the workflows from the navigation, newest first or found by name, each linked to its page with its schedule', async () => {
    const step = { id: 'only', target: { kind: 'http', url: target.url } };
    const scheduled = await scheduler.api('POST', '/v1/workflows', {
      name: 'console-nightly',
      steps: [step],
      schedule: { kind: 'cron', expression: '0 2 * * *', timezone: 'Europe/Paris' },
    });
    expect(scheduled.status).toBe(201);
    expect((await scheduler.api('POST', '/v1/workflows', { name: 'console-adhoc', steps: [step] })).status).toBe(201);
    await visit('#/jobs');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Workflows' }).waitFor();
    const rows = page.locator('#workflows-results table tbody tr');
    await expect.poll(() => rows.count(), { timeout: UI_TIMEOUT }).toBeGreaterThanOrEqual(2);
    // Newest first: the one made last leads.
    expect(await rows.first().locator('td, th').first().textContent()).toBe('console-adhoc');
    const nightly = rows.filter({ hasText: 'console-nightly' });
    expect(await nightly.textContent()).toContain('active');
    expect(await rows.filter({ hasText: 'console-adhoc' }).textContent()).toContain('on request');
    await screenshot(page, 'workflows');

    await page.getByLabel('Search workflows').fill('console-n');
    await expect.poll(() => rows.count(), { timeout: UI_TIMEOUT }).toBe(1);
    await page.getByRole('link', { name: 'console-nightly' }).click();
    await page.getByRole('heading', { level: 1, name: 'Workflow console-nightly' }).waitFor();
    expect(await page.locator('#workflow-schedule').textContent()).toMatch(/Schedule: .*2:00.*active, next run \d{4}-\d{2}-\d{2} 02:00:00/);
    await page.getByRole('button', { name: 'Pause schedule' }).click();
    await expect.poll(() => page.locator('#workflow-schedule-status').textContent(), { timeout: UI_TIMEOUT }).toBe('paused');
    await page.getByRole('button', { name: 'Resume schedule' }).click();
    await expect.poll(() => page.locator('#workflow-schedule-status').textContent(), { timeout: UI_TIMEOUT }).toBe('active');

    await page.getByRole('button', { name: 'Delete workflow' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('Delete workflow console-nightly?');
    await dialog.getByRole('button', { name: 'Delete workflow' }).click();
    await expect.poll(() => page.locator('#workflow-deleted').textContent(), { timeout: UI_TIMEOUT }).toMatch(/^Deleted \d{4}-/);
    expect(await page.locator('#workflow-schedule-status').textContent()).toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Start a run' }).isHidden()).toBe(true);
    const { deletedAt } = (await scheduler.api('GET', `/v1/workflows/${scheduled.body.workflowId}`)).body;
    expect(await page.locator('#workflow-deleted').textContent()).toBe(
      `Deleted ${newYorkText(deletedAt)}. Its runs stay readable; it can no longer be started or changed.`,
    );
  });
});

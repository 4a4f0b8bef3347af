// The console: a hash router over the pages, the sign-in gate and the navigation on every page.
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { checkKey, session } from './api';
import { h } from './dom';
import type { Page, PageContext } from './page';
import { errorText } from './page';
import { createPage } from './pages/create';
import { deadPage } from './pages/dead';
import { healthPage } from './pages/health';
import { jobPage } from './pages/job';
import { jobsPage } from './pages/jobs';
import { runPage } from './pages/run';
import { workflowPage, workflowRunPage } from './pages/workflow';
import { workflowsPage } from './pages/workflows';

const routes: readonly (readonly [RegExp, Page, string])[] = [
  [/^\/jobs$/, jobsPage, 'Jobs'],
  [/^\/jobs\/([^/]+)$/, jobPage, 'Jobs'],
  [/^\/runs\/([^/]+)$/, runPage, 'Jobs'],
  [/^\/workflows$/, workflowsPage, 'Workflows'],
  [/^\/workflows\/([^/]+)$/, workflowPage, 'Workflows'],
  [/^\/workflows\/([^/]+)\/runs\/([^/]+)$/, workflowRunPage, 'Workflows'],
  [/^\/dead$/, deadPage, 'Dead runs'],
  [/^\/health$/, healthPage, 'Health'],
  [/^\/new$/, createPage, 'New job'],
];

const NAV: readonly (readonly [string, string])[] = [
  ['Jobs', '#/jobs'],
  ['Workflows', '#/workflows'],
  ['Dead runs', '#/dead'],
  ['Health', '#/health'],
  ['New job', '#/new'],
];

const app = document.getElementById('app')!;
let leaving: (() => void)[] = [];

function leave(): void {
  for (const cleanup of leaving) cleanup();
  leaving = [];
}

function signInPage(): void {
  document.title = 'Sign in · Job scheduler';
  const input = h('input', { id: 'api-key', name: 'apiKey', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const message = h('p', { id: 'sign-in-message', role: 'alert', class: 'error' });
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form',
    { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'Job scheduler'),
    h('p', null, 'Sign in with an API key of your tenant. It is kept for this browser tab only.'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    button,
    message,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    button.disabled = true;
    message.textContent = '';
    checkKey(key)
      .then((accepted) => {
        if (!accepted) {
          message.textContent = 'That API key was not accepted. Check it and try again.';
          input.focus();
          return;
        }
        session.signIn(key);
        if (!location.hash.startsWith('#/')) location.hash = '#/jobs';
        render();
      })
      .catch((error: unknown) => {
        message.textContent = `The API could not be reached: ${error instanceof Error ? error.message : String(error)}`;
      })
      .finally(() => {
        button.disabled = false;
      });
  });
  app.replaceChildren(h('main', { id: 'main', tabindex: '-1' }, form));
  input.focus();
}

/** A link to the page already shown loads it again (the hash does not change, so no hashchange). */
function reloadIfCurrent(href: string): void {
  if (location.hash === href) window.setTimeout(render, 0);
}

function render(): void {
  leave();
  if (!session.key()) {
    signInPage();
    return;
  }
  const path = location.hash.startsWith('#/') ? location.hash.slice(1) : '/jobs';
  const found = routes.map(([pattern, page, section]) => ({ match: pattern.exec(path), page, section })).find((route) => route.match);
  const main = h('main', { id: 'main', tabindex: '-1' });
  const status = h('p', { role: 'status', class: 'status', id: 'status' });
  // A followed page's failed refresh: said once, gone with the next refresh that works.
  const refreshStatus = h('p', { role: 'status', class: 'note', id: 'refresh-status' });
  const signOut = h('button', { type: 'button', class: 'link' }, 'Sign out');
  signOut.addEventListener('click', () => {
    session.signOut();
    location.hash = '#/jobs';
    render();
  });
  const nav = h(
    'nav',
    { 'aria-label': 'Main' },
    h(
      'ul',
      null,
      NAV.map(([label, href]) =>
        h('li', null, h('a', { href, 'aria-current': found?.section === label ? 'page' : null, onclick: () => reloadIfCurrent(href) }, label)),
      ),
    ),
    signOut,
  );
  app.replaceChildren(h('header', null, h('a', { href: '#/jobs', class: 'brand' }, 'Job scheduler'), nav), refreshStatus, main, status);
  const context: PageContext = {
    main,
    params: found?.match?.slice(1).map(decodedPart) ?? [],
    onLeave: (cleanup) => leaving.push(cleanup),
    say: (text) => {
      status.textContent = text;
    },
    every: (ms, task) => {
      let running = false;
      const timer = window.setInterval(() => {
        if (running || document.hidden) return;
        running = true;
        void task()
          .then(
            () => (refreshStatus.textContent = ''),
            (error: unknown) => (refreshStatus.textContent = `Couldn't refresh (${errorText(error)}); retrying every ${ms / 1000} s.`),
          )
          .finally(() => {
            running = false;
          });
      }, ms);
      leaving.push(() => window.clearInterval(timer));
    },
  };
  if (!found) {
    main.append(h('h1', null, 'Not found'), h('p', null, 'No such page. ', h('a', { href: '#/jobs' }, 'Go to the jobs.')));
    return;
  }
  found.page(context).catch((error: unknown) => {
    main.append(h('p', { role: 'alert', class: 'error' }, errorText(error)));
  });
}

// The skip link moves the focus to the page and leaves the address alone: the hash is the route.
document.querySelector('a.skip')?.addEventListener('click', (event) => {
  event.preventDefault();
  document.getElementById('main')?.focus();
});
window.addEventListener('hashchange', () => {
  // Only routes: another hash (a bookmarked `#main`) is not a page.
  if (location.hash.startsWith('#/') || location.hash === '') render();
});
window.addEventListener('scheduler:unauthorized', () => {
  session.signOut();
  render();
});
render();

/** A route part as typed: an address whose escapes do not decode (`%E0`) is taken as written, and its page then finds nothing. */
function decodedPart(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

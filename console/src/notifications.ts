// The outcome notifications of a run or of a workflow run, as a table: where each goes, whether it
// was sent, its tries and last error, and "Send again" on a dead one (decisions 0152 and 0153).
import type { NotificationView } from './api';
import { h, table } from './dom';
import { STATUS_CLASS } from './page';

/** A workflow run's notifications carry the end that raised them. */
type Shown = NotificationView & { readonly retry?: number };

export function notificationsTable<T extends Shown>(
  caption: string,
  notifications: readonly T[],
  resend: (notification: T, button: HTMLButtonElement) => Promise<unknown>,
): HTMLElement {
  const ends = notifications.some((notification) => notification.retry !== undefined);
  return h(
    'section',
    { 'aria-labelledby': 'notifications-title' },
    h('h2', { id: 'notifications-title' }, 'Notifications'),
    table(
      caption,
      [...(ends ? ['End'] : []), 'Event', 'Status', 'Tries', 'Last error', 'Destination', ''],
      notifications.map((notification) => {
        const button = h(
          'button',
          { type: 'button', hidden: notification.status !== 'DEAD', 'data-key': `resend-${notification.retry ?? 0}-${notification.event}` },
          'Send again',
        );
        button.addEventListener('click', () => void resend(notification, button));
        const destination = notification.destination;
        return [
          ...(ends ? [notification.retry === 0 ? 'first' : `retry ${notification.retry}`] : []),
          notification.event,
          h('span', { class: STATUS_CLASS(notification.status), 'data-notification-status': notification.event }, notification.status.toLowerCase()),
          String(notification.tries),
          notification.lastError ?? '—',
          destination.kind === 'http' ? destination.url : destination.kind === 'sns' ? destination.topicArn : destination.eventBusName,
          button,
        ];
      }),
      { id: 'notifications-table' },
    ),
  );
}

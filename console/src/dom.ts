// A small element builder: h('button', { type: 'button', onclick }, 'Pause').
export type Child = Node | string | number | null | undefined | false | readonly Child[];
type Handler = (event: Event) => void;
export type Props = Record<string, string | number | boolean | null | undefined | Handler>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child as readonly Child[]);
    else parent.appendChild(typeof child === 'object' ? (child as Node) : document.createTextNode(String(child)));
  }
}

/** A table with a caption, header cells as column headers and one row per item. */
export function table(caption: string, headers: readonly string[], rows: readonly (readonly Child[])[], props: Props = {}): HTMLTableElement {
  return h(
    'table',
    props,
    h('caption', null, caption),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        headers.map((header) => h('th', { scope: 'col' }, header)),
      ),
    ),
    h(
      'tbody',
      null,
      rows.map((cells) =>
        h(
          'tr',
          null,
          cells.map((cell, index) => h('td', { 'data-label': headers[index] ?? '' }, cell)),
        ),
      ),
    ),
  );
}

/** A modal question with two buttons; resolves true when confirmed. */
export function confirmDialog(question: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = h('dialog', { 'aria-labelledby': 'confirm-question', class: 'confirm' });
    const close = (answer: boolean): void => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    dialog.append(
      h('p', { id: 'confirm-question' }, question),
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'button', onclick: () => close(false) }, 'Cancel'),
        h('button', { type: 'button', class: 'danger', onclick: () => close(true) }, confirmLabel),
      ),
    );
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault();
      close(false);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

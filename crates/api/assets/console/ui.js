// The page's shared parts: element lookup, the watched session's state, the status lines, the event log.
export const $ = (id) => document.getElementById(id);

/** The watched session and its channel, video and take-over; owned here, changed by the session modules. */
export const state = { session: null, socket: null, pc: null, whepResource: null, takeover: false,
  typed: '', typeTimer: null, clickTimer: null, pinned: null, ended: null, connected: false };

export function status(text) { $('status').textContent = text; }

export function who(text, error = false) { $('who').textContent = text; $('who').classList.toggle('error', error); }

/** A new element with its text set as text (never HTML), and optional class. */
export function el(tag, text = '', className = '') {
  const node = document.createElement(tag);
  if (text) node.textContent = text;
  if (className) node.className = className;
  return node;
}

/** A button that runs `action` when pressed. */
export function button(text, action, title = '') {
  const b = el('button', text);
  b.type = 'button';
  if (title) b.title = title;
  b.addEventListener('click', action);
  return b;
}

export function log(kind, text) {
  const li = document.createElement('li');
  li.dataset.kind = kind;
  li.textContent = `${new Date().toLocaleTimeString()} ${kind}${text ? ': ' + text : ''}`;
  $('log').appendChild(li);
  $('log').scrollTop = $('log').scrollHeight;
}

/** A one-line text for a task event. */
export function describe(event) {
  switch (event.type) {
    case 'agent': return event.content;
    case 'action': return event.data && event.data.name;
    case 'response_update': return event.data && event.data.message;
    case 'task_completed': return event.data && event.data.message;
    case 'guardrail_trigger': return event.data && event.data.value;
    case 'error': return `${event.code}: ${event.error}`;
    default: return JSON.stringify(event);
  }
}

// The page's shared parts: element lookup, the watched session's state, the status lines, the event log.
export const $ = (id) => document.getElementById(id);

/** The watched session and its channel, video and take-over; owned here, changed by the session modules. */
export const state = { session: null, socket: null, pc: null, whepResource: null, takeover: false,
  typed: '', typeTimer: null, clickTimer: null, pinned: null, ended: null, connected: false,
  // Per session id: its tasks, and when it was recorded from.
  tasks: new Map(), recordedAt: new Map(), known: new Set() };

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

/** "3 min ago" for a time in ms since the epoch. */
export function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** US dollars, to the cent below a dollar's hundredth shown as such. */
export function money(usd) {
  const n = Number(usd) || 0;
  return n !== 0 && Math.abs(n) < 0.01 ? `$${n.toFixed(4)}` : `$${n.toFixed(2)}`;
}

export function bytes(n) {
  const v = Number(n) || 0;
  if (v < 1024) return `${v} B`;
  if (v < 1024 * 1024) return `${(v / 1024).toFixed(1)} KB`;
  if (v < 1024 ** 3) return `${(v / 1024 ** 2).toFixed(1)} MB`;
  return `${(v / 1024 ** 3).toFixed(1)} GB`;
}

/** Copies text to the clipboard; where the page may not (plain http to another host), shows it instead. */
export async function copy(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    status(`${what} copied`);
  } catch {
    status(`${what}: ${text}`);
  }
}

/** Saves a blob as a file the browser downloads. */
export function saveBlob(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
}

// Page-wide happenings: a module announces what happened, and the modules that care listen at load, so no
// module imports the ones that react to it (the console's modules import downwards only, docs/architecture.md).
const hub = new EventTarget();
export function announce(name, detail) { hub.dispatchEvent(new CustomEvent(name, { detail })); }
export function on(name, listener) { hub.addEventListener(name, (event) => listener(event.detail)); }

/** Reports a failed call: a refused key as such (key.js forgets it), anything else in the status line. */
export function failed(what, e) {
  if (e.status === 401) announce('key-refused');
  else status(`could not ${what}: ${e.message}`);
}

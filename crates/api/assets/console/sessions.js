// The session list (each session's page title and URL, age and state as the server tells them; the id on
// hover or copy), starting a session with its options, and choosing (or leaving) the one the page watches.
import { api, key } from './api.js';
import { connect } from './channel.js';
import { setTakeover } from './takeover.js';
import { loadTasks, showTasks } from './tasks.js';
import { $, state, status, button, el, ago, copy, announce, on } from './ui.js';
import { watch } from './video.js';

// What the channel and the recordings learn reaches the list.
on('sessions-changed', () => refresh());
// A page that moved shows its new title and URL in the list (once a second at most).
let moved = null;
on('page-moved', () => { if (!moved) moved = setTimeout(() => { moved = null; refresh(); }, 1000); });
// A person's click or key may open a tab or follow a link, which sends no event: the list is read again
// once the page had a moment to load, and once more for a slower one.
let acted = [];
on('person-acted', () => {
  for (const t of acted) clearTimeout(t);
  acted = [1000, 3000].map((ms) => setTimeout(refresh, ms));
});
on('session-ended', () => render());
on('ids-seen', (ids) => knownSessions(ids));

/** Enables the controls that can act now, and says in the video's place what to do next. */
export function render() {
  const live = Boolean(state.session) && !state.ended;
  for (const b of document.querySelectorAll('button[data-state], #takeover, #send-task, #guardrail-takeover')) b.disabled = !live;
  for (const id of ['start', 'refresh', 'refresh-recordings', 'forget-key', 'nav-account']) $(id).disabled = !key();
  $('persist-profile').disabled = !$('profile').value.trim();
  if ($('persist-profile').disabled) $('persist-profile').checked = false;
  $('current').classList.toggle('ended', Boolean(state.ended));
  let hint = '';
  if (!key()) hint = 'Paste your API key above to begin.';
  else if (!state.session) hint = 'Start a session, or pick one from the list and press Watch.';
  else if (state.ended) hint = `This session ended (${state.ended}). Start or pick another one.`;
  $('hint').textContent = hint;
  $('hint').hidden = !hint;
}

/** How the list words a session's state (`GET /start/sessions`' `state`). */
const SHOWN_STATE = { idle: 'idle', running: 'running', paused: 'paused', guardrail: 'waiting for you' };

/** One entry of the list: the page's title and URL, age and state, as the server tells them. */
function entry(s) {
  const li = el('li', '', 'session');
  li.title = s.sessionId;
  li.dataset.id = s.sessionId;
  li.dataset.state = s.state || '';
  if (state.session && state.session.sessionId === s.sessionId) li.classList.add('selected');
  const what = el('div', '', 'what');
  const address = s.url || '';
  const heading = s.title || address.replace(/^https?:\/\//, '');
  const url = el('span', address || 'page not known yet', 'url');
  url.title = address;
  const at = Date.parse(s.createdAt);
  const shown = SHOWN_STATE[s.state] || s.state || 'live';
  what.append(el('strong', heading || s.sessionId.slice(0, 18), heading ? 'title' : 'title id'), url,
    el('span', `${Number.isNaN(at) ? 'started elsewhere' : `started ${ago(at)}`} · ${shown}`, 'meta'));
  const actions = el('span', '', 'actions');
  actions.append(button('Watch', () => select(s)), button('Copy id', () => copy(s.sessionId, 'session id'), s.sessionId));
  li.append(what, actions);
  return li;
}

/** Lists the caller's live sessions; false when the key was refused. */
export async function refresh() {
  if (!key()) { status('paste an API key first'); return false; }
  try {
    const { sessions } = await api('GET', '/start/sessions');
    $('sessions').replaceChildren(...sessions.map(entry));
    if (!sessions.length) $('sessions').append(el('li', 'No live session: start one below.', 'empty'));
    knownSessions(sessions.map((s) => s.sessionId));
    status(sessions.length ? `${sessions.length} live session(s)` : 'no live sessions: start one');
    return true;
  } catch (e) {
    if (e.status === 401) { announce('key-refused'); return false; }
    status(`could not list sessions: ${e.message}`);
    return true;
  }
}

/** Offers session ids (live, started here, recorded) where one is typed, e.g. to list its files. */
export function knownSessions(ids) {
  for (const id of ids) state.known.add(id);
  $('session-ids').replaceChildren(...[...state.known].map((id) => { const o = el('option'); o.value = id; return o; }));
}

export async function start(event) {
  event.preventDefault();
  const body = {};
  const startingUrl = $('starting-url').value.trim();
  const profile = $('profile').value.trim();
  if (startingUrl) body.startingUrl = startingUrl;
  if (profile) body.profile = profile;
  if (profile && $('persist-profile').checked) body.persistProfile = true;
  if ($('record').checked) body.recording = true;
  try {
    const session = await api('POST', '/start/start-session', body);
    await select(session);
    refresh();
    if (body.recording) announce('recordings-changed');
  } catch (e) { status(`could not start a session: ${e.message}`); }
}

/** Stops watching: closes the channel and the video. */
export async function leave() {
  if (state.socket) { state.socket.disconnect(); state.socket = null; }
  if (state.whepResource) {
    fetch(state.whepResource, { method: 'DELETE' }).catch(() => {});
    state.whepResource = null;
  }
  if (state.pc) { state.pc.close(); state.pc = null; }
  $('video').srcObject = null;
  $('mjpeg').removeAttribute('src');
  $('mjpeg').hidden = true;
  setTakeover(false, false);
  state.connected = false;
  $('conn').textContent = '';
}

export async function select(session) {
  await leave();
  state.session = session;
  state.ended = null;
  $('current').textContent = session.sessionId;
  $('current').title = session.sessionId;
  render();
  $('log').replaceChildren();
  showTasks();
  loadTasks(session.sessionId);
  connect(session);
  watch(session.streaming).catch((e) => status(`no video: ${e.message}`));
}

// The session list, starting a session, and choosing (or leaving) the one the page watches.
import { api, key } from './api.js';
import { connect } from './channel.js';
import { refuseKey } from './key.js';
import { setTakeover } from './takeover.js';
import { $, state, status, button } from './ui.js';
import { watch } from './video.js';

/** Enables the controls that can act now, and says in the video's place what to do next. */
export function render() {
  const live = Boolean(state.session) && !state.ended;
  for (const b of document.querySelectorAll('button[data-state], #takeover, #send-task')) b.disabled = !live;
  $('start').disabled = !key();
  $('refresh').disabled = !key();
  $('refresh-recordings').disabled = !key();
  $('forget-key').disabled = !key();
  $('current').classList.toggle('ended', Boolean(state.ended));
  let hint = '';
  if (!key()) hint = 'Paste your API key above to begin.';
  else if (!state.session) hint = 'Start a session, or pick one from the list and press Watch.';
  else if (state.ended) hint = `This session ended (${state.ended}). Start or pick another one.`;
  $('hint').textContent = hint;
  $('hint').hidden = !hint;
}

/** Lists the caller's live sessions; false when the key was refused. */
export async function refresh() {
  if (!key()) { status('paste an API key first'); return false; }
  try {
    const { sessions } = await api('GET', '/start/sessions');
    const list = $('sessions');
    list.replaceChildren();
    for (const s of sessions) {
      const li = document.createElement('li');
      li.textContent = s.sessionId.slice(0, 18);
      li.title = s.sessionId;
      if (state.session && state.session.sessionId === s.sessionId) li.classList.add('selected');
      li.appendChild(button('Watch', () => select(s)));
      list.appendChild(li);
    }
    status(sessions.length ? `${sessions.length} live session(s)` : 'no live sessions: start one');
    return true;
  } catch (e) {
    if (e.status === 401) { refuseKey(); return false; }
    status(`could not list sessions: ${e.message}`);
    return true;
  }
}

export async function start(event) {
  event.preventDefault();
  const startingUrl = $('starting-url').value.trim();
  try {
    const body = await api('POST', '/start/start-session', startingUrl ? { startingUrl } : {});
    await select(body);
    refresh();
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
  render();
  $('log').replaceChildren();
  connect(session);
  watch(session.streaming).catch((e) => status(`no video: ${e.message}`));
}

// webpilot console: watch and drive your sessions. The API key is kept in this tab's session storage
// (never in a URL); the video comes over WebRTC (WHEP) with the MJPEG stream as the fallback; events
// and commands go over the session's Socket.IO channel. Everything shown is set as text, never HTML.
'use strict';

const KEY_SLOT = 'webpilot.key';
const FRAME = { width: 1024, height: 600, band: 155 };
const SPECIAL_KEYS = new Set(['Enter', 'Escape', 'Tab', 'Backspace', 'Delete', 'ArrowUp', 'ArrowDown',
  'ArrowLeft', 'ArrowRight', 'Home', 'End', 'PageUp', 'PageDown']);

const $ = (id) => document.getElementById(id);
const state = { session: null, socket: null, pc: null, whepResource: null, takeover: false,
  typed: '', typeTimer: null, clickTimer: null, pinned: null, ended: null, connected: false };

function key() { return sessionStorage.getItem(KEY_SLOT) || ''; }
function status(text) { $('status').textContent = text; }
function who(text, error = false) { $('who').textContent = text; $('who').classList.toggle('error', error); }

/** Enables the controls that can act now, and says in the video's place what to do next. */
function render() {
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

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${key()}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await resp.json().catch(() => ({}));
  if (!resp.ok || json.success === false) {
    const error = new Error(`${resp.status} ${json.code || ''}: ${json.message || ''}`);
    error.status = resp.status;
    throw error;
  }
  return json;
}

function log(kind, text) {
  const li = document.createElement('li');
  li.dataset.kind = kind;
  li.textContent = `${new Date().toLocaleTimeString()} ${kind}${text ? ': ' + text : ''}`;
  $('log').appendChild(li);
  $('log').scrollTop = $('log').scrollHeight;
}

function describe(event) {
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

// ---- sessions -------------------------------------------------------------------------------

async function refresh() {
  if (!key()) { status('paste an API key first'); return; }
  try {
    const { sessions } = await api('GET', '/start/sessions');
    const list = $('sessions');
    list.replaceChildren();
    for (const s of sessions) {
      const li = document.createElement('li');
      li.textContent = s.sessionId.slice(0, 18);
      li.title = s.sessionId;
      if (state.session && state.session.sessionId === s.sessionId) li.classList.add('selected');
      const watch = document.createElement('button');
      watch.type = 'button';
      watch.textContent = 'Watch';
      watch.addEventListener('click', () => select(s));
      li.appendChild(watch);
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

async function start(event) {
  event.preventDefault();
  const startingUrl = $('starting-url').value.trim();
  try {
    const body = await api('POST', '/start/start-session', startingUrl ? { startingUrl } : {});
    await select(body);
    refresh();
  } catch (e) { status(`could not start a session: ${e.message}`); }
}

async function leave() {
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

async function select(session) {
  await leave();
  state.session = session;
  state.ended = null;
  $('current').textContent = session.sessionId;
  render();
  $('log').replaceChildren();
  connect(session);
  watch(session.streaming).catch((e) => status(`no video: ${e.message}`));
}

// ---- events and commands (Socket.IO) ---------------------------------------------------------

function connect(session) {
  const socket = io(session.socketURL, { auth: { sessionId: session.sessionId }, transports: ['websocket'] });
  state.socket = socket;
  socket.on('connect', () => { state.connected = true; $('conn').textContent = ''; log('connect', ''); });
  socket.on('connect_error', (e) => {
    log('connect_error', e.message);
    if (state.ended) return;
    $('conn').textContent = 'cannot connect: retrying…';
    // A session that is no longer listed has ended while the channel was down.
    api('GET', '/start/sessions').then(({ sessions }) => {
      if (state.session === session && !sessions.some((s) => s.sessionId === session.sessionId)) ended('no longer live');
    }).catch(() => {});
  });
  socket.on('disconnect', (why) => {
    state.connected = false;
    if (state.ended || why === 'io client disconnect') return;
    log('disconnect', why);
    $('conn').textContent = 'connection lost: reconnecting…';
    // The service closed the channel: connect again by hand (the client only retries on its own
    // after a transport failure).
    if (why === 'io server disconnect') socket.connect();
  });
  socket.on('message', (event) => {
    log(event.type, describe(event));
    if (event.type === 'guardrail_trigger') askGuardrail(event.data && event.data.value);
  });
  socket.on('end_session', (e) => { ended((e && e.reason) || 'unknown reason'); refresh(); });
  socket.on('instance:disconnected', () => log('instance:disconnected', 'waiting for the browser to come back'));
  socket.on('instance:reconnected', () => log('instance:reconnected', ''));
}

/** The session ended: say so and why, stop its video, and disable what can no longer act. */
function ended(reason) {
  if (state.ended) return;
  log('end_session', reason);
  state.ended = String(reason);
  setTakeover(false, false);
  if (state.socket) { state.socket.disconnect(); state.socket = null; }
  $('current').textContent = `${state.session ? state.session.sessionId : ''} (ended: ${state.ended})`;
  $('conn').textContent = '';
  $('guardrail').hidden = true;
  status(`the session ended (${state.ended})`);
  if (state.pc) { state.pc.close(); state.pc = null; }
  $('mjpeg').removeAttribute('src');
  render();
}

function send(message) {
  return new Promise((resolve) => {
    if (!state.socket || state.ended) { status('select a live session first'); resolve(null); return; }
    state.socket.timeout(60000).emit('message', message, (err, answer) => {
      if (err) { status('no answer from the service'); resolve(null); return; }
      if (answer && answer.success === false) status(`${answer.code}: ${answer.message}`);
      resolve(answer);
    });
  });
}

function interact(action) { return send({ actionType: 'interaction', action }); }

async function sendTask(event) {
  event.preventDefault();
  const taskDetails = $('task').value.trim();
  if (!taskDetails) return;
  log('task', taskDetails);
  $('task').value = '';
  const answer = await send({ actionType: 'newTask', newState: 'start', taskDetails });
  if (!answer || answer.success === false) log('task refused', answer ? `${answer.code}: ${answer.message}` : 'no answer');
}

function askGuardrail(question) {
  $('guardrail-question').textContent = question || '';
  $('guardrail').hidden = false;
  $('guardrail-answer').focus();
}

async function answerGuardrail(event) {
  event.preventDefault();
  const taskDetails = $('guardrail-answer').value.trim();
  if (!taskDetails) return;
  const answer = await send({ actionType: 'guardrail', taskDetails, newState: 'resume' });
  if (answer && answer.success !== false) {
    log('guardrail answer', taskDetails);
    $('guardrail').hidden = true;
    $('guardrail-answer').value = '';
  }
}

// ---- video: WebRTC (WHEP), else MJPEG ---------------------------------------------------------

async function watch(streaming) {
  try {
    await watchWebRtc(streaming.webRTCURL);
    $('video-mode').textContent = 'WebRTC';
  } catch (e) {
    log('video', `WebRTC unavailable (${e.message}); using the MJPEG stream`);
    if (state.pc) { state.pc.close(); state.pc = null; }
    $('video').hidden = true;
    $('mjpeg').hidden = false;
    $('mjpeg').src = streaming.webViewURL;
    $('video-mode').textContent = 'MJPEG';
  }
}

async function watchWebRtc(url) {
  const pc = new RTCPeerConnection();
  state.pc = pc;
  pc.addTransceiver('video', { direction: 'recvonly' });
  const video = $('video');
  video.hidden = false;
  pc.ontrack = (e) => { video.srcObject = e.streams[0] || new MediaStream([e.track]); video.play().catch(() => {}); };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((done) => {
    if (pc.iceGatheringState === 'complete') { done(); return; }
    pc.addEventListener('icegatheringstatechange', () => { if (pc.iceGatheringState === 'complete') done(); });
    setTimeout(done, 3000);
  });
  const resp = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/sdp' }, body: pc.localDescription.sdp });
  if (resp.status !== 201) throw new Error(`the WHEP endpoint answered ${resp.status}`);
  const location = resp.headers.get('Location');
  if (location) state.whepResource = new URL(location, url).href;
  await pc.setRemoteDescription({ type: 'answer', sdp: await resp.text() });
  await new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error('no connection in 10 s')), 10000);
    pc.addEventListener('connectionstatechange', () => {
      if (pc.connectionState === 'connected') { clearTimeout(timer); done(); }
      if (pc.connectionState === 'failed') { clearTimeout(timer); fail(new Error('the connection failed')); }
    });
  });
}

// ---- take over: clicks, typing and keys on the video -----------------------------------------

function setTakeover(on, tell = true) {
  state.takeover = on;
  if (on && (!state.session || state.ended)) return;
  $('takeover').setAttribute('aria-pressed', String(on));
  $('takeover').textContent = on ? 'Release control' : 'Take over';
  $('screen').classList.toggle('takeover', on);
  if (tell && state.socket) interact({ type: on ? 'takeOverControl' : 'releaseControl' });
  if (on) $('screen').focus();
}

/** The frame coordinates (the spec's interaction coordinates) of a mouse event on the video. */
function framePoint(event) {
  const rect = $('screen').getBoundingClientRect();
  const x = Math.round((event.clientX - rect.left) * FRAME.width / rect.width);
  const y = Math.round((event.clientY - rect.top) * FRAME.height / rect.height);
  return { x: Math.min(Math.max(x, 0), FRAME.width), y: Math.min(Math.max(y, 0), FRAME.height) };
}

function onClick(event) {
  if (!state.takeover) return;
  const { x, y } = framePoint(event);
  if (y < FRAME.band) { status('the browser band is not clickable'); return; }
  // A second click may follow: wait briefly so a double click is sent as one DOUBLE_CLICK.
  clearTimeout(state.clickTimer);
  if (event.detail >= 2) return;
  state.clickTimer = setTimeout(() => { interact({ type: 'CLICK', x, y }); log('click', `${x},${y}`); }, 250);
}

function onDoubleClick(event) {
  if (!state.takeover) return;
  clearTimeout(state.clickTimer);
  const { x, y } = framePoint(event);
  if (y >= FRAME.band) { interact({ type: 'DOUBLE_CLICK', x, y }); log('double click', `${x},${y}`); }
}

function flushTyping() {
  clearTimeout(state.typeTimer);
  if (state.typed) { interact({ type: 'TYPE', text: state.typed }); state.typed = ''; }
}

function onKey(event) {
  if (!state.takeover || event.ctrlKey || event.metaKey || event.altKey) return;
  if (SPECIAL_KEYS.has(event.key)) {
    event.preventDefault();
    flushTyping();
    interact({ type: 'KEY_PRESS', key: event.key });
  } else if (event.key.length === 1) {
    // Characters typed in a burst go as one TYPE.
    event.preventDefault();
    state.typed += event.key;
    clearTimeout(state.typeTimer);
    state.typeTimer = setTimeout(flushTyping, 150);
  }
}

function onPaste(event) {
  if (!state.takeover) return;
  event.preventDefault();
  const text = event.clipboardData.getData('text');
  if (text) { flushTyping(); interact({ type: 'TYPE', text }); }
}

// ---- wiring ---------------------------------------------------------------------------------

function useKey(event) {
  event.preventDefault();
  const value = $('key').value.trim();
  if (!value) return;
  sessionStorage.setItem(KEY_SLOT, value);
  $('key').value = '';
  who('checking the key…');
  checkKey();
}

/** Lists the sessions with the stored key: it is either in use, or refused and forgotten. */
async function checkKey() {
  render();
  if (await refresh()) {
    who('key in use (this tab only)');
    refreshRecordings();
  }
}

function refuseKey() {
  sessionStorage.removeItem(KEY_SLOT);
  who('wrong key: the service refused it. Paste another one.', true);
  status('');
  render();
}

function forgetKey() {
  sessionStorage.removeItem(KEY_SLOT);
  leave();
  $('sessions').replaceChildren();
  $('recordings').replaceChildren();
  $('player').hidden = true;
  $('recording').removeAttribute('src');
  state.session = null;
  state.ended = null;
  $('current').textContent = 'no session selected';
  who('');
  status('key forgotten');
  render();
}

// ---- recordings ---------------------------------------------------------------------------

async function refreshRecordings() {
  if (!key()) return;
  try {
    const { recordings } = await api('GET', '/recordings?limit=20');
    const list = $('recordings');
    list.replaceChildren();
    for (const r of recordings) {
      const li = document.createElement('li');
      li.textContent = `${r.sessionId.slice(0, 14)} ${r.status}`;
      li.title = `${r.sessionId}, started ${r.startedAt}`;
      const play = document.createElement('button');
      play.type = 'button';
      play.textContent = 'Play';
      play.disabled = r.status === 'recording';
      play.addEventListener('click', () => playRecording(r));
      li.appendChild(play);
      list.appendChild(li);
    }
  } catch (e) {
    if (e.status === 401) refuseKey();
    else status(`could not list recordings: ${e.message}`);
  }
}

/** A short text for one timeline entry. */
function timelineText(entry) {
  const at = `${(entry.t / 1000).toFixed(1)}s`;
  if (entry.event === 'navigation') return `${at} navigation: ${entry.data.url}`;
  if (entry.event === 'message' && entry.data.type === 'action') {
    const detail = entry.data.data || {};
    return `${at} action: ${detail.name || ''} ${detail.url || ''}`.trimEnd();
  }
  if (entry.event === 'message') return `${at} ${entry.data.type}: ${describe(entry.data) || ''}`;
  return `${at} ${entry.event}`;
}

/** Plays a recording through a read-only link (a <video> cannot send the key), its timeline beside. */
async function playRecording(r) {
  try {
    const link = await api('POST', `/recordings/${encodeURIComponent(r.sessionId)}/share`, { ttlSeconds: 3600 });
    const video = $('recording');
    video.src = link.videoURL;
    $('playing').textContent = r.sessionId;
    $('player').hidden = false;
    $('player').scrollIntoView({ block: 'start' });
    const resp = await fetch(link.eventsURL);
    const { events } = await resp.json();
    const list = $('timeline');
    list.replaceChildren();
    for (const entry of events) {
      const li = document.createElement('li');
      li.dataset.t = String(entry.t);
      li.textContent = timelineText(entry);
      li.addEventListener('click', () => { state.pinned = li; video.currentTime = entry.t / 1000; });
      list.appendChild(li);
    }
    video.play().catch(() => {});
  } catch (e) { status(`could not play the recording: ${e.message}`); }
}

/** Highlights the timeline entry under the playhead: the one just clicked while the playhead is still at
 * it (several events can share a moment), else the last one at or before the playhead. */
function followPlayhead() {
  const now = $('recording').currentTime * 1000;
  if (state.pinned && Math.abs(Number(state.pinned.dataset.t) - now) > 500) state.pinned = null;
  let current = state.pinned;
  for (const li of $('timeline').children) {
    li.classList.remove('current');
    if (!state.pinned && Number(li.dataset.t) <= now) current = li;
  }
  if (current) current.classList.add('current');
}

document.addEventListener('DOMContentLoaded', () => {
  $('key-form').addEventListener('submit', useKey);
  $('forget-key').addEventListener('click', forgetKey);
  $('refresh').addEventListener('click', refresh);
  $('refresh-recordings').addEventListener('click', refreshRecordings);
  $('recording').addEventListener('timeupdate', followPlayhead);
  $('recording').addEventListener('seeked', followPlayhead);
  $('start-form').addEventListener('submit', start);
  $('task-form').addEventListener('submit', sendTask);
  $('guardrail').addEventListener('submit', answerGuardrail);
  $('takeover').addEventListener('click', () => setTakeover(!state.takeover));
  for (const b of document.querySelectorAll('button[data-state]')) {
    b.addEventListener('click', async () => {
      const answer = await send({ actionType: 'state', newState: b.dataset.state });
      if (answer && answer.success !== false) log('state', b.dataset.state);
    });
  }
  const screen = $('screen');
  screen.addEventListener('click', onClick);
  screen.addEventListener('dblclick', onDoubleClick);
  screen.addEventListener('keydown', onKey);
  screen.addEventListener('paste', onPaste);
  window.addEventListener('pagehide', leave);
  render();
  if (key()) checkKey();
});

// The watched session's Socket.IO channel: its events, its end, and the commands sent over it.
import { api } from './api.js';
import { taskEvent, taskSent } from './tasks.js';
import { $, state, status, log, describe, announce } from './ui.js';

export function connect(session) {
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
    taskEvent(event);
    if (event.type === 'action' && event.data && event.data.url) announce('page-moved', { id: session.sessionId, url: event.data.url });
    if (event.type === 'guardrail_trigger') announce('sessions-changed');
    if (event.type === 'guardrail_trigger') askGuardrail(event.data || {});
    // A finished task may have moved the page: the list shows its title and URL again.
    if (event.type === 'task_completed' || event.type === 'error') announce('sessions-changed');
  });
  socket.on('end_session', (e) => {
    ended((e && e.reason) || 'unknown reason');
    announce('sessions-changed');
    announce('recordings-changed');
  });
  socket.on('instance:disconnected', () => log('instance:disconnected', 'waiting for the browser to come back'));
  socket.on('instance:reconnected', () => log('instance:reconnected', ''));
}

/** The session ended: say so and why, stop its video, and disable what can no longer act. */
export function ended(reason) {
  if (state.ended) return;
  log('end_session', reason);
  state.ended = String(reason);
  announce('control-lost');
  if (state.socket) { state.socket.disconnect(); state.socket = null; }
  $('current').textContent = `${state.session ? state.session.sessionId : ''} (ended: ${state.ended})`;
  $('conn').textContent = '';
  $('guardrail').hidden = true;
  status(`the session ended (${state.ended})`);
  if (state.pc) { state.pc.close(); state.pc = null; }
  $('mjpeg').removeAttribute('src');
  announce('session-ended');
}

/** Sends a send-message `message` over the channel; resolves with the ack, or null. */
export function send(message) {
  return new Promise((resolve) => {
    if (!state.socket || state.ended) { status('select a live session first'); resolve(null); return; }
    state.socket.timeout(60000).emit('message', message, (err, answer) => {
      if (err) { status('no answer from the service'); resolve(null); return; }
      if (answer && answer.success === false) status(`${answer.code}: ${answer.message}`);
      resolve(answer);
    });
  });
}

export function interact(action) { return send({ actionType: 'interaction', action }); }

export async function sendTask(event) {
  event.preventDefault();
  const taskDetails = $('task').value.trim();
  if (!taskDetails) return;
  log('task', taskDetails);
  $('task').value = '';
  const answer = await send({ actionType: 'newTask', newState: 'start', taskDetails });
  if (!answer || answer.success === false) log('task refused', answer ? `${answer.code}: ${answer.message}` : 'no answer');
  else if (answer.taskId) taskSent(taskDetails, answer);
}

export async function sendState(newState) {
  const answer = await send({ actionType: 'state', newState });
  if (answer && answer.success !== false) {
    log('state', newState);
    // The list shows the state the service tells.
    announce('sessions-changed');
  }
}

/** Shows the agent's question (or a human check waiting for a person) above the video. */
function askGuardrail({ type, value }) {
  const check = type === 'human_verification_needed';
  $('guardrail-kind').textContent = check ? 'A human check waits for you:' : 'The agent asks:';
  $('guardrail-help').hidden = !check;
  $('guardrail-question').textContent = value || '';
  $('guardrail').dataset.kind = type || '';
  $('guardrail').hidden = false;
  $('guardrail-answer').focus();
}

export async function answerGuardrail(event) {
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

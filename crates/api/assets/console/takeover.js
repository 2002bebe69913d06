// Taking over the watched session: clicks, double clicks, typing, keys and pastes on the video.
import { interact } from './channel.js';
import { $, state, status, log, on, announce } from './ui.js';

const FRAME = { width: 1024, height: 600, band: 155 };
const SPECIAL_KEYS = new Set(['Enter', 'Escape', 'Tab', 'Backspace', 'Delete', 'ArrowUp', 'ArrowDown',
  'ArrowLeft', 'ArrowRight', 'Home', 'End', 'PageUp', 'PageDown']);

// A channel that ended or was left takes control back from the person, without telling the service.
on('control-lost', () => setTakeover(false, false));

export function setTakeover(taking, tell = true) {
  state.takeover = taking;
  if (taking && (!state.session || state.ended)) return;
  $('takeover').setAttribute('aria-pressed', String(taking));
  $('takeover').textContent = taking ? 'Release control' : 'Take over';
  $('guardrail-takeover').textContent = $('takeover').textContent;
  $('screen').classList.toggle('takeover', taking);
  if (tell && state.socket) interact({ type: taking ? 'takeOverControl' : 'releaseControl' });
  if (taking) $('screen').focus();
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
  state.clickTimer = setTimeout(() => { interact({ type: 'CLICK', x, y }); log('click', `${x},${y}`); announce('person-acted'); }, 250);
}

function onDoubleClick(event) {
  if (!state.takeover) return;
  clearTimeout(state.clickTimer);
  const { x, y } = framePoint(event);
  if (y >= FRAME.band) { interact({ type: 'DOUBLE_CLICK', x, y }); log('double click', `${x},${y}`); announce('person-acted'); }
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
    announce('person-acted');
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

/** Arms the video element for take-over input. */
export function wireTakeover() {
  $('takeover').addEventListener('click', () => setTakeover(!state.takeover));
  $('guardrail-takeover').addEventListener('click', () => setTakeover(!state.takeover));
  const screen = $('screen');
  screen.addEventListener('click', onClick);
  screen.addEventListener('dblclick', onDoubleClick);
  screen.addEventListener('keydown', onKey);
  screen.addEventListener('paste', onPaste);
}

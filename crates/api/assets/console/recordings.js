// Recordings: the list, and the player whose video and timeline stay in step.
import { api, key } from './api.js';
import { $, state, status, describe, button, el, ago, copy, announce, on } from './ui.js';

on('recordings-changed', () => refreshRecordings());

export async function refreshRecordings() {
  if (!key()) return;
  try {
    const { recordings } = await api('GET', '/recordings?limit=20');
    const list = $('recordings');
    list.replaceChildren();
    for (const r of recordings) {
      const started = Date.parse(r.startedAt);
      if (!Number.isNaN(started)) state.recordedAt.set(r.sessionId, started);
      const li = el('li', '', 'recording');
      li.title = `${r.sessionId}, started ${r.startedAt}`;
      const what = el('div', '', 'what');
      const length = r.durationMs ? ` · ${(r.durationMs / 1000).toFixed(0)} s` : '';
      what.append(el('span', r.sessionId.slice(0, 14), 'id'),
        el('span', `${Number.isNaN(started) ? '' : ago(started)}${length} · ${r.status}`, 'meta'));
      const play = button('Play', () => playRecording(r));
      play.disabled = r.status === 'recording';
      li.append(what, play);
      list.appendChild(li);
    }
    if (!recordings.length) list.append(el('li', 'None yet: start a session with "Record it".', 'empty'));
    announce('ids-seen', recordings.map((r) => r.sessionId));
  } catch (e) {
    if (e.status === 401) announce('key-refused');
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
    state.shareLink = link.videoURL;
    $('download').href = link.videoURL;
    $('download').download = `${r.sessionId}.webm`;
    $('share-url').value = '';
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
      // A button inside, so the keyboard reaches every moment too.
      li.append(el('button', timelineText(entry)));
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

export function wireRecordings() {
  $('refresh-recordings').addEventListener('click', refreshRecordings);
  $('recording').addEventListener('timeupdate', followPlayhead);
  $('recording').addEventListener('seeked', followPlayhead);
  $('share').addEventListener('click', () => {
    if (!state.shareLink) return;
    $('share-url').value = state.shareLink;
    $('share-url').select();
    copy(state.shareLink, 'share link');
  });
}

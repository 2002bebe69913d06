// The API key in the header: using it (checked by listing the sessions), refusing a wrong one, forgetting it.
import { dropKey, keepKey } from './api.js';
import { refreshRecordings } from './recordings.js';
import { leave, refresh, render } from './sessions.js';
import { $, state, status, who, on } from './ui.js';

// Any module whose call the service answered 401 announces it; the key is then forgotten here.
on('key-refused', () => refuseKey());

export function useKey(event) {
  event.preventDefault();
  const value = $('key').value.trim();
  if (!value) return;
  keepKey(value);
  $('key').value = '';
  who('checking the key…');
  checkKey();
}

/** Lists the sessions with the stored key: it is either in use, or refused and forgotten. */
export async function checkKey() {
  render();
  if (await refresh()) {
    who('key in use (this tab only)');
    refreshRecordings();
  }
}

export function refuseKey() {
  dropKey();
  who('wrong key: the service refused it. Paste another one.', true);
  status('');
  render();
}

export function forgetKey() {
  dropKey();
  leave();
  $('sessions').replaceChildren();
  $('recordings').replaceChildren();
  for (const id of ['usage', 'files', 'profiles', 'webhooks', 'deliveries', 'webhook-secret']) $(id).replaceChildren();
  $('player').hidden = true;
  $('recording').removeAttribute('src');
  state.session = null;
  state.ended = null;
  $('current').textContent = 'no session selected';
  who('');
  status('key forgotten');
  render();
}

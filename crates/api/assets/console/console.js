// webpilot console's entry module: wires the page's controls to the modules that act on them. The key is kept
// in this tab's session storage (api.js); the video comes over WebRTC with MJPEG as the fallback (video.js);
// events and commands go over the session's Socket.IO channel (channel.js). Everything shown is set as text.
import { showAccount, showProfiles, wireAccount } from './account.js';
import { key } from './api.js';
import { answerGuardrail, sendState, sendTask } from './channel.js';
import { checkKey, forgetKey, useKey } from './key.js';
import { wireRecordings } from './recordings.js';
import { leave, refresh, render, start } from './sessions.js';
import { wireTakeover } from './takeover.js';
import { $ } from './ui.js';
import { wireWebhooks } from './webhooks.js';

/** Shows one page: the sessions (watch and drive) or the account. */
function show(view) {
  for (const b of document.querySelectorAll('nav button')) {
    if (b.dataset.view === view) b.setAttribute('aria-current', 'page'); else b.removeAttribute('aria-current');
  }
  $('view-sessions').hidden = view !== 'sessions';
  $('view-account').hidden = view !== 'account';
  if (view === 'account') showAccount();
}

$('key-form').addEventListener('submit', useKey);
$('forget-key').addEventListener('click', () => { show('sessions'); forgetKey(); });
$('refresh').addEventListener('click', refresh);
$('start-form').addEventListener('submit', start);
$('profile').addEventListener('input', render);
$('profile').addEventListener('focus', () => { if (key()) showProfiles(); }, { once: true });
$('task-form').addEventListener('submit', sendTask);
$('guardrail').addEventListener('submit', answerGuardrail);
for (const b of document.querySelectorAll('button[data-state]')) b.addEventListener('click', () => sendState(b.dataset.state));
for (const b of document.querySelectorAll('nav button')) b.addEventListener('click', () => show(b.dataset.view));
wireRecordings();
wireTakeover();
wireAccount();
wireWebhooks();
window.addEventListener('pagehide', leave);
render();
if (key()) checkKey();

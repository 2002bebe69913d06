// webpilot console's entry module: wires the page's controls to the modules that act on them. The key is kept
// in this tab's session storage (api.js); the video comes over WebRTC with MJPEG as the fallback (video.js);
// events and commands go over the session's Socket.IO channel (channel.js). Everything shown is set as text.
import { key } from './api.js';
import { answerGuardrail, sendState, sendTask } from './channel.js';
import { checkKey, forgetKey, useKey } from './key.js';
import { wireRecordings } from './recordings.js';
import { leave, refresh, render, start } from './sessions.js';
import { wireTakeover } from './takeover.js';
import { $ } from './ui.js';

$('key-form').addEventListener('submit', useKey);
$('forget-key').addEventListener('click', forgetKey);
$('refresh').addEventListener('click', refresh);
$('start-form').addEventListener('submit', start);
$('task-form').addEventListener('submit', sendTask);
$('guardrail').addEventListener('submit', answerGuardrail);
for (const b of document.querySelectorAll('button[data-state]')) b.addEventListener('click', () => sendState(b.dataset.state));
wireRecordings();
wireTakeover();
window.addEventListener('pagehide', leave);
render();
if (key()) checkKey();

// The account page: balance and recent usage, a session's files with download, and profiles (list,
// export, delete). Webhooks are in webhooks.js.
import { api, apiBlob, seg } from './api.js';
import { showWebhooks } from './webhooks.js';
import { $, status, button, el, money, bytes, saveBlob, failed } from './ui.js';

export async function showAccount() {
  await Promise.all([showUsage(), showProfiles(), showWebhooks()]);
}

async function showUsage() {
  try {
    const u = await api('GET', '/usage?limit=20');
    $('balance').textContent = money(u.balance);
    $('held').textContent = money(u.held);
    const quota = u.storage.quotaBytes ? ` of ${bytes(u.storage.quotaBytes)}` : '';
    $('storage').textContent = `${bytes(u.storage.usedBytes)}${quota}`;
    $('usage').replaceChildren(...u.lines.map((line) => {
      const li = el('li', '', 'line');
      li.title = line.taskId || line.sessionId || '';
      li.append(el('span', new Date(line.createdAt).toLocaleString(), 'meta'),
        el('span', `${line.kind} ${(line.sessionId || '').slice(0, 14)}`, 'what'),
        el('strong', money(line.cost), 'cost'));
      return li;
    }));
    if (!u.lines.length) $('usage').append(el('li', 'No charges yet.', 'empty'));
  } catch (e) { failed('read the usage', e); }
}

async function showFiles(event) {
  event.preventDefault();
  const sid = $('files-session').value.trim();
  if (!sid) { status('type or pick a session id'); return; }
  try {
    const { files } = await api('GET', `/sessions/${seg(sid)}/files`);
    $('files').replaceChildren(...files.map((f) => {
      const li = el('li', '', 'file');
      li.title = `sha256 ${f.sha256}`;
      const what = el('div', '', 'what');
      what.append(el('span', f.name, 'name'), el('span', `${bytes(f.bytes)} · ${f.mimeType} · ${f.source}`, 'meta'));
      li.append(what, button('Download', () => download(`/sessions/${seg(sid)}/files/${seg(f.name)}`, f.name)));
      return li;
    }));
    if (!files.length) $('files').append(el('li', 'This session has no files.', 'empty'));
  } catch (e) { failed('list the files', e); }
}

async function download(path, name) {
  try { saveBlob(await apiBlob(path), name); status(`${name} downloaded`); } catch (e) { failed(`download ${name}`, e); }
}

export async function showProfiles() {
  try {
    const { profiles } = await api('GET', '/profiles');
    $('profile-names').replaceChildren(...profiles.map((p) => { const o = el('option'); o.value = p.name; return o; }));
    $('profiles').replaceChildren(...profiles.map((p) => {
      const li = el('li', '', 'profile');
      const what = el('div', '', 'what');
      what.append(el('span', p.name, 'name'),
        el('span', `${p.cookies} cookies · ${p.origins} origins · ${bytes(p.bytes)} · saved ${new Date(p.updatedAt).toLocaleString()}`, 'meta'));
      const actions = el('span', '', 'actions');
      actions.append(
        button('Export', () => download(`/profiles/${seg(p.name)}/export`, `${p.name}.json`), 'Download its storage state as JSON'),
        button('Delete', () => removeProfile(p.name)));
      li.append(what, actions);
      return li;
    }));
    if (!profiles.length) $('profiles').append(el('li', 'No profiles: start a session with a profile and "Save".', 'empty'));
  } catch (e) { failed('list the profiles', e); }
}

async function removeProfile(name) {
  if (!window.confirm(`Delete the profile ${name}?`)) return;
  try { await api('DELETE', `/profiles/${seg(name)}`); status(`profile ${name} deleted`); } catch (e) { failed('delete the profile', e); }
  showProfiles();
}

export function wireAccount() {
  $('refresh-account').addEventListener('click', showAccount);
  $('files-form').addEventListener('submit', showFiles);
}

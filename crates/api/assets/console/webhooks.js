// The account page's webhooks: create (the secret is shown once), rotate the secret, see deliveries, delete.
import { api, seg } from './api.js';
import { $, status, button, el, failed } from './ui.js';

export async function showWebhooks() {
  try {
    const { webhooks } = await api('GET', '/webhooks');
    $('webhooks').replaceChildren(...webhooks.map((w) => {
      const li = el('li', '', 'webhook');
      li.title = w.webhookId;
      li.dataset.id = w.webhookId;
      const what = el('div', '', 'what');
      what.append(el('span', w.url, 'url'),
        el('span', `${w.events ? w.events.join(', ') : 'all events'}${w.description ? ` · ${w.description}` : ''}`, 'meta'));
      const actions = el('span', '', 'actions');
      actions.append(button('Rotate secret', () => rotate(w)), button('Deliveries', () => deliveries(w)),
        button('Delete', () => remove(w)));
      li.append(what, actions);
      return li;
    }));
    if (!webhooks.length) $('webhooks').append(el('li', 'No webhooks yet.', 'empty'));
  } catch (e) { failed('list the webhooks', e); }
}

/** Shows a signing secret; the service shows each one only once. */
function showSecret(text, secret) {
  $('webhook-secret').replaceChildren(el('span', text), el('code', secret, 'secret'));
}

async function create(event) {
  event.preventDefault();
  const body = { url: $('webhook-url').value.trim() };
  const events = $('webhook-events').value.split(',').map((e) => e.trim()).filter(Boolean);
  if (events.length) body.events = events;
  const description = $('webhook-description').value.trim();
  if (description) body.description = description;
  try {
    const made = await api('POST', '/webhooks', body);
    showSecret('Its signing secret (shown once, keep it now): ', made.secret);
    $('webhook-form').reset();
    status('webhook created');
  } catch (e) { failed('create the webhook', e); }
  showWebhooks();
}

async function rotate(w) {
  try {
    const r = await api('POST', `/webhooks/${seg(w.webhookId)}/rotate-secret`);
    showSecret(`New secret (the old one signs too until ${new Date(r.previousSecretValidUntil).toLocaleString()}): `, r.secret);
    status('secret rotated');
  } catch (e) { failed('rotate the secret', e); }
}

async function deliveries(w) {
  try {
    const { deliveries: list } = await api('GET', `/webhooks/${seg(w.webhookId)}/deliveries`);
    $('deliveries-title').hidden = false;
    $('deliveries-title').textContent = `Deliveries to ${w.url}`;
    $('deliveries').replaceChildren(...list.map((d) => {
      const outcome = d.statusCode ? `HTTP ${d.statusCode}` : d.error || 'no answer';
      const li = el('li', '', 'delivery');
      li.append(el('span', `${d.type} · attempt ${d.attempt}`, 'what'),
        el('span', `${outcome} · ${d.latencyMs ?? '–'} ms · ${new Date(d.createdAt).toLocaleString()}`, 'meta'));
      return li;
    }));
    if (!list.length) $('deliveries').append(el('li', 'No deliveries yet.', 'empty'));
  } catch (e) { failed('list the deliveries', e); }
}

async function remove(w) {
  if (!window.confirm(`Delete the webhook to ${w.url}?`)) return;
  try { await api('DELETE', `/webhooks/${seg(w.webhookId)}`); status('webhook deleted'); } catch (e) { failed('delete the webhook', e); }
  showWebhooks();
}

export function wireWebhooks() {
  $('webhook-form').addEventListener('submit', create);
}

// The service's REST API with the key kept in this tab's session storage (never in a URL).
const KEY_SLOT = 'webpilot.key';

export function key() { return sessionStorage.getItem(KEY_SLOT) || ''; }
export function keepKey(value) { sessionStorage.setItem(KEY_SLOT, value); }
export function dropKey() { sessionStorage.removeItem(KEY_SLOT); }

/** Calls the API with the key; throws an Error carrying `status` and `code` on a refusal. */
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${key()}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await resp.json().catch(() => ({}));
  if (!resp.ok || json.success === false) {
    const error = new Error(`${resp.status} ${json.code || ''}: ${json.message || ''}`);
    error.status = resp.status;
    error.code = json.code;
    throw error;
  }
  return json;
}

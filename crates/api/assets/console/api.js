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

/** GETs a file with the key (a link cannot send it); throws like `api` on a refusal. */
export async function apiBlob(path) {
  const resp = await fetch(path, { headers: { Authorization: `Bearer ${key()}` } });
  if (!resp.ok) {
    const json = await resp.json().catch(() => ({}));
    const error = new Error(`${resp.status} ${json.code || ''}: ${json.message || ''}`);
    error.status = resp.status;
    throw error;
  }
  return resp.blob();
}

/** A path segment from a value (ids and names go into paths escaped). */
export const seg = (value) => encodeURIComponent(String(value));

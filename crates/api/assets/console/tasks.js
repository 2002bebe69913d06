// The watched session's task history: each task's text, status, answer, cost and duration, read from
// `GET /start/sessions/:sessionId/tasks` (so a reload shows them all), and moved along by the channel's events
// until the next read.
import { api, seg } from './api.js';
import { $, state, el, money } from './ui.js';

/** How the history words a task's status (the route's `status`). */
const SHOWN_STATUS = { active: 'running', guardrail: 'waiting for you', complete: 'complete', failed: 'failed' };

function tasksOf(sessionId) {
  if (!state.tasks.has(sessionId)) state.tasks.set(sessionId, []);
  return state.tasks.get(sessionId);
}

/** The task `taskId` of the list, added (newest first) when the list does not hold it yet. */
function find(sessionId, taskId) {
  const list = tasksOf(sessionId);
  let task = list.find((t) => t.taskId === taskId);
  if (!task) {
    task = { taskId, text: '', status: 'running', answer: '', cost: null, seconds: null };
    list.unshift(task);
  }
  return task;
}

/** A task this tab sent was accepted (`ack` is the newTask answer). */
export function taskSent(text, ack) {
  const task = find(state.session.sessionId, ack.taskId);
  task.text = text;
  showTasks();
}

/** Follows a task event of the watched session. */
export function taskEvent(event) {
  if (!state.session || !event.taskId) return;
  const sid = state.session.sessionId;
  const task = find(sid, event.taskId);
  if (event.type === 'guardrail_trigger') task.status = 'waiting for you';
  if (event.type === 'task_completed' || event.type === 'error') {
    task.status = event.type === 'error' ? 'failed' : 'complete';
    task.answer = event.type === 'error' ? `${event.code}: ${event.error}` : (event.data && event.data.message) || '';
    loadTasks(sid);
  }
  showTasks();
}

/** Reads the session's tasks from the service (its stored history, with the running task's live state). */
export async function loadTasks(sid) {
  try {
    const { tasks } = await api('GET', `/start/sessions/${seg(sid)}/tasks?limit=200`);
    const known = new Map(tasksOf(sid).map((t) => [t.taskId, t]));
    state.tasks.set(sid, tasks.map((t) => {
      const read = {
        taskId: t.taskId,
        text: t.task,
        status: SHOWN_STATUS[t.status] || t.status,
        answer: t.status === 'failed' ? `${t.code || ''}: ${t.error || ''}` : t.answer || '',
        cost: typeof t.cost === 'number' ? t.cost : null,
        seconds: typeof t.durationMs === 'number' ? t.durationMs / 1000 : null,
      };
      // An end the channel told of is kept until the service has stored it too.
      const seen = known.get(t.taskId);
      const over = (s) => s === 'complete' || s === 'failed';
      if (seen && over(seen.status) && !over(read.status)) return { ...read, status: seen.status, answer: seen.answer };
      return read;
    }));
  } catch { /* what the events said stays */ }
  if (state.session && state.session.sessionId === sid) showTasks();
}

/** Shows the watched session's tasks, newest first. */
export function showTasks() {
  const list = $('tasks');
  const tasks = state.session ? tasksOf(state.session.sessionId) : [];
  if (!tasks.length) { list.replaceChildren(el('li', 'No task yet: send one above.', 'empty')); return; }
  list.replaceChildren(...tasks.map((t) => {
    const li = el('li', '', 'task');
    li.dataset.status = t.status;
    li.title = t.taskId;
    const meta = el('span', '', 'meta');
    const badge = el('span', t.status, `badge ${t.status.replace(/\s+/g, '-')}`);
    const figures = [t.cost === null ? '' : money(t.cost), t.seconds === null ? '' : `${t.seconds.toFixed(1)} s`];
    meta.append(badge, el('span', figures.filter(Boolean).join(' · ')));
    li.append(el('span', t.text || '(text not known)', 'task-text'), meta);
    if (t.answer) li.append(el('span', t.answer, 'answer'));
    return li;
  }));
}

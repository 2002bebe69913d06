// The watched session's task history: each task's text, status, answer, cost and duration, from the tasks
// this tab sent, the channel's events, and each finished task's poll (`GET /task/:sessionId/:taskId`).
import { seg } from './api.js';
import { $, state, el, money } from './ui.js';

function tasksOf(sessionId) {
  if (!state.tasks.has(sessionId)) state.tasks.set(sessionId, []);
  return state.tasks.get(sessionId);
}

function find(sessionId, taskId) {
  const list = tasksOf(sessionId);
  let task = list.find((t) => t.taskId === taskId);
  if (!task) {
    task = { taskId, text: '(sent from elsewhere)', status: 'running', answer: '', cost: null, seconds: null, began: Date.now() };
    list.push(task);
  }
  return task;
}

/** A task this tab sent was accepted (`ack` is the newTask answer). */
export function taskSent(text, ack) {
  const sid = state.session.sessionId;
  const task = find(sid, ack.taskId);
  task.text = text;
  state.states.set(sid, 'running');
  showTasks();
}

/** Follows a task event of the watched session. */
export function taskEvent(event) {
  if (!state.session || !event.taskId) return;
  const sid = state.session.sessionId;
  const task = find(sid, event.taskId);
  if (event.type === 'guardrail_trigger') { task.status = 'waiting for you'; state.states.set(sid, 'waiting for you'); }
  if (event.type === 'task_completed' || event.type === 'error') {
    task.status = event.type === 'error' ? 'failed' : 'complete';
    task.answer = event.type === 'error' ? `${event.code}: ${event.error}` : (event.data && event.data.message) || '';
    task.seconds = (Date.now() - task.began) / 1000;
    state.states.set(sid, 'idle');
    settle(sid, task);
  }
  showTasks();
}

/** Reads a finished task's stored outcome: its answer, cost and time. */
async function settle(sid, task) {
  try {
    const resp = await fetch(`/task/${seg(sid)}/${seg(task.taskId)}`);
    const done = await resp.json();
    if (done.usage && typeof done.usage.cost === 'number') task.cost = done.usage.cost;
    if (done.type === 'task_completed' && done.data) {
      task.answer = done.data.message || task.answer;
      if (typeof done.data.completion_time === 'number') task.seconds = done.data.completion_time;
    }
    if (done.status === 'failed') { task.status = 'failed'; task.answer = `${done.code || ''}: ${done.error || ''}`; }
  } catch { /* the event's values stay */ }
  showTasks();
}

/** Shows the watched session's tasks, newest first. */
export function showTasks() {
  const list = $('tasks');
  const tasks = state.session ? [...tasksOf(state.session.sessionId)].reverse() : [];
  if (!tasks.length) { list.replaceChildren(el('li', 'No task yet: send one above.', 'empty')); return; }
  list.replaceChildren(...tasks.map((t) => {
    const li = el('li', '', 'task');
    li.dataset.status = t.status;
    li.title = t.taskId;
    const meta = el('span', '', 'meta');
    const badge = el('span', t.status, `badge ${t.status.replace(/\s+/g, '-')}`);
    const figures = [t.cost === null ? '' : money(t.cost), t.seconds === null ? '' : `${t.seconds.toFixed(1)} s`];
    meta.append(badge, el('span', figures.filter(Boolean).join(' · ')));
    li.append(el('span', t.text, 'task-text'), meta);
    if (t.answer) li.append(el('span', t.answer, 'answer'));
    return li;
  }));
}

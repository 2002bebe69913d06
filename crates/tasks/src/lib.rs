//! Background work, one policy: every task is spawned here, with a name and a `tracing` span.
//!
//! - [`Tasks`] is a cloneable group of long-lived tasks (a server, a heartbeat, a worker, a pruner): a
//!   `TaskTracker` that knows when the last one ended and a `CancellationToken` that tells them to stop.
//!   Groups nest ([`Tasks::child`]): a child stops when its parent does, and its owner waits for it at the
//!   point of shutdown where it belongs, so the service stops its parts in order.
//! - [`spawn_owned`] and [`spawn_abort_on_drop`] start a task that belongs to a value (a page's watcher, a
//!   connection's reader, a peer's loop): the value keeps its handle and ends it by aborting or dropping it.
//!
//! No other part starts a task by hand (see `docs/architecture.md`, "Background work").

use std::future::Future;
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};
use tokio_util::task::{AbortOnDropHandle, TaskTracker};
use tracing::Instrument;

/// A group of long-lived tasks that stop together. Clones share the group.
#[derive(Clone, Debug, Default)]
pub struct Tasks {
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl Tasks {
    /// A new root group.
    pub fn new() -> Tasks {
        Tasks::default()
    }

    /// A group of its own that is told to stop with this one (or alone, by [`Tasks::stop`]); this group's
    /// [`Tasks::wait`] does not wait for it.
    pub fn child(&self) -> Tasks {
        Tasks { tracker: TaskTracker::new(), stop: self.stop.child_token() }
    }

    /// Runs `work` as a task of this group, named `name` in its span (a child of the caller's span).
    /// It runs to its end: a task that must end at the stop signal awaits [`Tasks::stopping`].
    pub fn spawn<F>(&self, name: &'static str, work: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(work.instrument(span(name)))
    }

    /// Runs `work` as a task of this group until it ends or the group is told to stop, whichever comes
    /// first (then `work` is dropped where it waits).
    pub fn spawn_until_stopped<F>(&self, name: &'static str, work: F) -> JoinHandle<Option<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let stop = self.stop.clone();
        self.spawn(name, async move { stop.run_until_cancelled(work).await })
    }

    /// Resolves when the group is told to stop.
    pub fn stopping(&self) -> WaitForCancellationFuture<'_> {
        self.stop.cancelled()
    }

    /// Whether the group was told to stop.
    pub fn is_stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// The group's stop signal, for parts that take a token (graceful shutdown of a server).
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Tells every task of the group (and of its children) to stop; does not wait.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Waits until every task of the group has ended. The group takes no new tasks from here on
    /// (one spawned meanwhile still runs, and is waited for).
    pub async fn wait(&self) {
        self.tracker.close();
        self.tracker.wait().await;
    }

    /// Tells the group to stop and waits for its tasks.
    pub async fn shutdown(&self) {
        self.stop();
        self.wait().await;
    }

    /// How many tasks of the group are running.
    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    /// Whether no task of the group is running.
    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }
}

/// Runs `work` as a task owned by the caller, which keeps the handle and ends the task by aborting it
/// (or lets it end by itself); named `name` in its span.
pub fn spawn_owned<F>(name: &'static str, work: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // The one place a task is started outside a group: its owner holds the handle instead.
    tokio::spawn(work.instrument(span(name)))
}

/// [`spawn_owned`], aborted when the returned handle is dropped.
pub fn spawn_abort_on_drop<F>(name: &'static str, work: F) -> AbortOnDropHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    AbortOnDropHandle::new(spawn_owned(name, work))
}

fn span(name: &'static str) -> tracing::Span {
    tracing::info_span!("task", task = name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn a_group_stops_its_tasks_and_waits_for_them() {
        let tasks = Tasks::new();
        let finished = Arc::new(AtomicBool::new(false));
        let seen = finished.clone();
        let group = tasks.clone();
        tasks.spawn("cleaner", async move {
            group.stopping().await;
            seen.store(true, Ordering::SeqCst);
        });
        let forever = tasks.spawn_until_stopped("forever", std::future::pending::<()>());
        assert_eq!(tasks.len(), 2);
        tasks.shutdown().await;
        assert!(finished.load(Ordering::SeqCst), "the task ran its cleanup before wait returned");
        assert_eq!(forever.await.ok(), Some(None), "the endless task was dropped at the stop signal");
        assert!(tasks.is_empty());
    }

    #[tokio::test]
    async fn a_child_stops_with_its_parent_and_is_waited_for_on_its_own() {
        let parent = Tasks::new();
        let child = parent.child();
        let in_child = child.spawn_until_stopped("child", std::future::pending::<()>());
        parent.stop();
        assert!(child.is_stopping());
        child.wait().await;
        assert_eq!(in_child.await.ok(), Some(None));
        // A child told to stop alone leaves its parent running.
        let parent = Tasks::new();
        let child = parent.child();
        child.stop();
        assert!(!parent.is_stopping());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_ends_a_ticking_task_at_once_without_waiting_for_its_timer() {
        let tasks = Tasks::new();
        let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = ticks.clone();
        let heartbeat = tasks.spawn_until_stopped("heartbeat", async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                every.tick().await;
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        let start = tokio::time::Instant::now();
        tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), 3, "ticks at 0, 1 and 2 s");
        tasks.shutdown().await;
        assert_eq!(start.elapsed(), std::time::Duration::from_millis(2_500), "stopped at once, not at the next tick");
        assert_eq!(heartbeat.await.ok(), Some(None));
        assert_eq!(ticks.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_dropped_owned_handle_aborts_its_task() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = spawn_abort_on_drop("owned", async move {
            let _keep = tx;
            std::future::pending::<()>().await;
        });
        drop(handle);
        assert!(rx.await.is_err(), "the task (and its sender) went with the handle");
    }
}

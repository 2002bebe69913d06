//! Test help for timers under paused time (`#[tokio::test(start_paused = true)]`): a future that must
//! act at an exact moment, and not a millisecond before.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;
use tokio::time::{sleep, Instant};

/// One millisecond: what "just before" means.
pub const MS: Duration = Duration::from_millis(1);

/// Runs `work` (with time auto-advancing) and asserts it ends exactly `at` from now: still running a
/// millisecond before. Gives back its output.
pub async fn ends_exactly_at<T>(at: Duration, work: impl Future<Output = T>) -> T {
    let start = Instant::now();
    let mut work = pin!(work);
    if let Some(before) = at.checked_sub(MS) {
        tokio::select! {
            biased;
            _ = &mut work => panic!("ended at {:?}, before {at:?}", start.elapsed()),
            _ = sleep(before) => {}
        }
    }
    let out = work.await;
    assert_eq!(start.elapsed(), at, "ended at {:?}, not at {at:?}", start.elapsed());
    out
}

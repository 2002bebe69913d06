//! A session's clock: when it opened, when its maxDuration runs out, and when it goes idle (the idle
//! timeout after its last command, held off while a task runs), and the open time its end charges.

use std::time::Duration;
use tokio::time::Instant;

pub(super) struct Clock {
    /// When the session opened: its open time, up to `expires_at`, is charged when it ends.
    opened_at: Instant,
    expires_at: Instant,
    last_activity: Instant,
    idle_timeout: Duration,
}

impl Clock {
    /// A session opening now, for at most `max_duration`, ended after `idle_timeout` without a command.
    pub fn start(max_duration: Duration, idle_timeout: Duration) -> Clock {
        let now = Instant::now();
        Clock { opened_at: now, expires_at: now + max_duration, last_activity: now, idle_timeout }
    }

    /// Something happened (a command, a replaced browser): the idle timeout starts again now.
    pub fn touch(&mut self) {
        self.last_activity = Instant::now();
    }

    /// When the session's maxDuration runs out.
    pub fn expires_at(&self) -> Instant {
        self.expires_at
    }

    /// When an idle session ends: the idle timeout after its last activity, or, while a task runs, not
    /// before its maxDuration.
    pub fn idle_deadline(&self, task_running: bool) -> Instant {
        if task_running {
            self.expires_at
        } else {
            self.last_activity + self.idle_timeout
        }
    }

    /// Resolves when the session must end as expired: its maxDuration ran out, or it went idle.
    pub async fn expired(&self, task_running: bool) {
        tokio::select! {
            biased;
            _ = tokio::time::sleep_until(self.expires_at) => {}
            _ = tokio::time::sleep_until(self.idle_deadline(task_running)) => {}
        }
    }

    /// The open time charged when the session ends now (ms): never past its maxDuration.
    pub fn open_ms(&self) -> u64 {
        let open = Instant::now().min(self.expires_at).saturating_duration_since(self.opened_at);
        u64::try_from(open.as_millis()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::poll;
    use std::pin::pin;
    use tokio::time::advance;

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn an_idle_session_expires_at_its_idle_timeout_after_the_last_command() {
        let mut clock = Clock::start(Duration::from_secs(3600), Duration::from_secs(300));
        advance(Duration::from_secs(100)).await;
        clock.touch();
        let mut expired = pin!(clock.expired(false));
        advance(Duration::from_secs(300) - MS).await;
        assert!(poll!(&mut expired).is_pending(), "299.999 s after the last command the session is open");
        advance(MS).await;
        assert!(poll!(&mut expired).is_ready(), "300 s after it, the session expires");
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_task_holds_the_idle_timeout_off_until_max_duration() {
        let clock = Clock::start(Duration::from_secs(60), Duration::from_secs(10));
        let mut idle = pin!(clock.expired(false));
        let mut busy = pin!(clock.expired(true));
        advance(Duration::from_secs(10)).await;
        assert!(poll!(&mut idle).is_ready(), "without a task, it is idle after 10 s");
        assert!(poll!(&mut busy).is_pending(), "a running task keeps it open");
        advance(Duration::from_secs(50) - MS).await;
        assert!(poll!(&mut busy).is_pending(), "until its maxDuration");
        advance(MS).await;
        assert!(poll!(&mut busy).is_ready(), "which ends it, task or not");
    }

    #[tokio::test(start_paused = true)]
    async fn max_duration_ends_even_an_active_session() {
        let mut clock = Clock::start(Duration::from_secs(30), Duration::from_secs(20));
        {
            let mut expired = pin!(clock.expired(false));
            advance(Duration::from_secs(15)).await;
            assert!(poll!(&mut expired).is_pending());
        }
        clock.touch();
        assert_eq!(clock.idle_deadline(false), clock.expires_at() + Duration::from_secs(5));
        let mut expired = pin!(clock.expired(false));
        advance(Duration::from_secs(15) - MS).await;
        assert!(poll!(&mut expired).is_pending());
        advance(MS).await;
        assert!(poll!(&mut expired).is_ready(), "the maxDuration comes before the idle timeout");
    }

    #[tokio::test(start_paused = true)]
    async fn the_charged_open_time_stops_at_max_duration() {
        let clock = Clock::start(Duration::from_secs(60), Duration::from_secs(300));
        assert_eq!(clock.open_ms(), 0);
        advance(Duration::from_millis(42_500)).await;
        assert_eq!(clock.open_ms(), 42_500);
        advance(Duration::from_secs(60)).await;
        assert_eq!(clock.open_ms(), 60_000, "an end noticed late is charged up to maxDuration only");
    }
}

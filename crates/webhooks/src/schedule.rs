//! The retry schedule: how long after each failed attempt the next one is made (`5s,5m,30m,2h,5h,10h`
//! by default, so a message is tried seven times over about 18 hours, then marked failed).

use std::time::Duration;

/// The waits between attempts; its length is the number of retries after the first attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule(Vec<Duration>);

impl Default for RetrySchedule {
    fn default() -> Self {
        Self::parse("5s,5m,30m,2h,5h,10h").unwrap_or(RetrySchedule(Vec::new()))
    }
}

impl RetrySchedule {
    /// Parses comma-separated durations (`humantime` syntax: `500ms`, `5s`, `5m`, `2h`); an empty
    /// text means no retries.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let mut waits = Vec::new();
        for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let wait = humantime::parse_duration(part).map_err(|e| format!("'{part}': {e}"))?;
            waits.push(wait);
        }
        Ok(RetrySchedule(waits))
    }

    /// The wait before the next attempt, after `attempts_made` attempts failed; None when none is left.
    pub fn next_wait(&self, attempts_made: u64) -> Option<Duration> {
        let index = usize::try_from(attempts_made.checked_sub(1)?).ok()?;
        self.0.get(index).copied()
    }
}

impl std::str::FromStr for RetrySchedule {
    type Err = String;
    fn from_str(raw: &str) -> Result<Self, String> {
        Self::parse(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schedule_retries_six_times_then_gives_up() {
        let s = RetrySchedule::default();
        assert_eq!(s.next_wait(1), Some(Duration::from_secs(5)));
        assert_eq!(s.next_wait(2), Some(Duration::from_secs(300)));
        assert_eq!(s.next_wait(6), Some(Duration::from_secs(36_000)));
        assert_eq!(s.next_wait(7), None);
        assert_eq!(s.next_wait(0), None);
    }

    #[test]
    fn schedules_parse_and_bad_ones_say_why() {
        assert_eq!(RetrySchedule::parse("200ms, 1s").map(|s| s.next_wait(2)), Ok(Some(Duration::from_secs(1))));
        assert_eq!(RetrySchedule::parse(""), Ok(RetrySchedule(Vec::new())));
        assert!(RetrySchedule::parse("5 parsecs").is_err_and(|e| e.contains("5 parsecs")));
    }
}

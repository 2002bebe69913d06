//! Catches an agent going round in circles: the same actions on the same page, step after step, either
//! one step repeated or a cycle of two or three steps (A, B, A, B, …). The first time the model is
//! warned; if it carries on, the task fails with `AGENT_LOOP`, saying what repeated.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// Repetitions of a cycle that earn the model a warning.
pub const WARN_AFTER: usize = 3;
/// Repetitions of a cycle after which the task fails.
pub const FAIL_AFTER: usize = 5;
/// Longest cycle (in steps) looked for.
const MAX_PERIOD: usize = 3;

/// What the detector says after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    /// Tell the model (once per loop).
    Warn(String),
    /// Fail the task.
    Fail(String),
}

/// One step as the detector sees it: what the page looked like, and what was done on it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StepPrint {
    page: u64,
    actions: u64,
    described: String,
}

/// The steps of one task so far.
#[derive(Debug, Default)]
pub struct LoopDetector {
    steps: Vec<StepPrint>,
    warned: bool,
}

/// A stable hash of anything hashable (within one run of the service).
pub fn fingerprint(value: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

impl LoopDetector {
    /// Records a step: the page's fingerprint when it was observed and the step's actions (described
    /// in words for the messages), and says whether the agent is looping.
    pub fn record(&mut self, page: u64, actions: &[String]) -> Verdict {
        self.steps.push(StepPrint { page, actions: fingerprint(&actions), described: actions.join(", ") });
        let Some((period, repeats)) = self.tail_cycle() else {
            self.warned = false;
            return Verdict::Fine;
        };
        let what = self.describe(period);
        if repeats >= FAIL_AFTER {
            Verdict::Fail(format!(
                "the agent repeated {what} {repeats} times without the page changing, and kept on after being warned"
            ))
        } else if repeats >= WARN_AFTER && !self.warned {
            self.warned = true;
            Verdict::Warn(format!(
                "You have repeated {what} {repeats} times and the page did not change. Doing it again will not \
                 help: try a different action (another element, scrolling, another page), or call done with \
                 success=false and say what blocks you."
            ))
        } else {
            Verdict::Fine
        }
    }

    /// The shortest cycle the last steps repeat, with how many times in a row (at least twice).
    fn tail_cycle(&self) -> Option<(usize, usize)> {
        (1..=MAX_PERIOD).find_map(|p| {
            let n = self.steps.len();
            if n < 2 * p {
                return None;
            }
            let block = &self.steps[n - p..];
            let mut repeats = 1;
            while repeats * p + p <= n && self.steps[n - (repeats + 1) * p..n - repeats * p] == *block {
                repeats += 1;
            }
            (repeats >= 2).then_some((p, repeats))
        })
    }

    fn describe(&self, period: usize) -> String {
        let n = self.steps.len();
        let parts: Vec<&str> = self.steps[n - period..].iter().map(|s| s.described.as_str()).collect();
        if period == 1 {
            format!("\"{}\"", parts[0])
        } else {
            format!("the cycle \"{}\"", parts.join("\" then \""))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(d: &mut LoopDetector, page: u64, action: &str) -> Verdict {
        d.record(page, &[action.to_owned()])
    }

    #[test]
    fn the_same_action_on_the_same_page_is_warned_then_failed() {
        let mut d = LoopDetector::default();
        assert_eq!(step(&mut d, 1, "click [4]"), Verdict::Fine);
        assert_eq!(step(&mut d, 1, "click [4]"), Verdict::Fine);
        assert!(matches!(step(&mut d, 1, "click [4]"), Verdict::Warn(m) if m.contains("\"click [4]\" 3 times")));
        assert_eq!(step(&mut d, 1, "click [4]"), Verdict::Fine, "warned once");
        assert!(matches!(step(&mut d, 1, "click [4]"), Verdict::Fail(m) if m.contains("5 times")));
    }

    #[test]
    fn a_changing_page_or_other_actions_are_no_loop() {
        let mut d = LoopDetector::default();
        for page in 0..10 {
            assert_eq!(step(&mut d, page, "scroll down"), Verdict::Fine);
        }
        for i in 0..10 {
            assert_eq!(step(&mut d, 99, &format!("type [{i}]")), Verdict::Fine);
        }
    }

    #[test]
    fn a_two_step_cycle_is_caught_and_described() {
        let mut d = LoopDetector::default();
        let mut verdicts = Vec::new();
        for _ in 0..5 {
            verdicts.push(step(&mut d, 1, "navigate a"));
            verdicts.push(step(&mut d, 2, "go back"));
        }
        assert!(verdicts
            .iter()
            .any(|v| matches!(v, Verdict::Warn(m) if m.contains("\"navigate a\" then \"go back\""))));
        assert!(matches!(verdicts.last(), Some(Verdict::Fail(_))), "{verdicts:?}");
    }

    #[test]
    fn breaking_the_loop_rearms_the_warning() {
        let mut d = LoopDetector::default();
        for _ in 0..3 {
            step(&mut d, 1, "click [4]");
        }
        assert_eq!(step(&mut d, 2, "scroll down"), Verdict::Fine);
        step(&mut d, 3, "click [9]");
        step(&mut d, 3, "click [9]");
        assert!(matches!(step(&mut d, 3, "click [9]"), Verdict::Warn(_)));
    }
}

//! Token and compute usage of a task, and its price. Money is kept in micro-dollars (integers) so
//! balances never drift; it is shown as USD floats only at the edge.

use serde::Serialize;

/// Micro-dollars per US dollar.
pub const MICROS_PER_USD: i64 = 1_000_000;

pub fn usd_to_micros(usd: f64) -> i64 {
    (usd * MICROS_PER_USD as f64).round() as i64
}

pub fn micros_to_usd(micros: i64) -> f64 {
    micros as f64 / MICROS_PER_USD as f64
}

/// What a task used so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub compute_ms: u64,
}

/// Configurable prices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// USD per million input tokens.
    pub input_per_million: f64,
    /// USD per million output tokens.
    pub output_per_million: f64,
    /// USD per second of task compute time.
    pub compute_per_second: f64,
    /// USD per second a session is open (from start until it is terminated, ends or expires), charged
    /// on top of its tasks.
    pub session_per_second: f64,
}

impl Default for Prices {
    fn default() -> Self {
        Prices {
            input_per_million: 3.0,
            output_per_million: 15.0,
            compute_per_second: 0.0005,
            session_per_second: 0.00005,
        }
    }
}

impl Prices {
    /// What a session open for `ms` milliseconds costs, in micro-dollars (never negative).
    pub fn session_micros(&self, ms: u64) -> i64 {
        usd_to_micros(ms as f64 / 1000.0 * self.session_per_second.max(0.0))
    }
}

impl Usage {
    /// Cost in micro-dollars at `prices`.
    pub fn cost_micros(&self, prices: &Prices) -> i64 {
        let usd = self.input_tokens as f64 * prices.input_per_million / 1e6
            + self.output_tokens as f64 * prices.output_per_million / 1e6
            + self.compute_ms as f64 / 1000.0 * prices.compute_per_second;
        usd_to_micros(usd)
    }

    /// The spec's usage object.
    pub fn view(&self, prices: &Prices) -> UsageView {
        UsageView {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            compute_time: self.compute_ms as f64 / 1000.0,
            cost: micros_to_usd(self.cost_micros(prices)),
            session_cost: None,
        }
    }
}

/// The spec's Usage object, as serialised (fields in the alphabetical order responses have always had).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Usage)]
pub struct UsageView {
    /// Seconds.
    pub compute_time: f64,
    /// USD. For run-task (which ends its own session), everything the call charged: the task's usage and
    /// its session's open time.
    pub cost: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// USD: what the session's open time cost, when the call ended its session (run-task); part of `cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_cost: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_adds_tokens_and_compute() {
        let p =
            Prices { input_per_million: 2.0, output_per_million: 10.0, compute_per_second: 0.001, ..Prices::default() };
        let u = Usage { input_tokens: 1_000_000, output_tokens: 100_000, compute_ms: 2_000 };
        assert_eq!(u.cost_micros(&p), 2_000_000 + 1_000_000 + 2_000);
        assert_eq!(u.view(&p).cost, 3.002);
        assert_eq!(u.view(&p).compute_time, 2.0);
    }

    #[test]
    fn session_time_is_priced_per_second() {
        let p = Prices { session_per_second: 0.001, ..Prices::default() };
        assert_eq!(p.session_micros(2_500), 2_500);
        assert_eq!(p.session_micros(0), 0);
        assert_eq!(Prices { session_per_second: -1.0, ..p }.session_micros(1_000), 0);
    }
}

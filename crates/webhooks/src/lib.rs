//! webpilot-webhooks: delivering the webhook messages the store queues (signed in the Standard Webhooks
//! format, retried on a schedule, each message once per cluster), and checking an endpoint's URL against
//! the egress policy, at registration and again at every delivery.

mod guardrails;
mod schedule;
mod sign;
mod target;
mod worker;

pub use guardrails::follow_guardrails;
pub use schedule::RetrySchedule;
pub use sign::{new_secret, signature_headers};
pub use target::{check_url, TargetError};
pub use worker::{spawn_worker, WorkerConfig};

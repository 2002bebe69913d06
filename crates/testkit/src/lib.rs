//! Test kit for webpilot: a small local fixture website that integration tests serve themselves, and a
//! scripted model server speaking the OpenAI Chat Completions wire format, and a viewer browser for
//! tests of the pages people use, real upstream proxies (HTTP and SOCKS5) that log what they carry, and a
//! TLS site behind them.
//!
//! Start it with [`FixtureSite::start`], point the browser at [`FixtureSite::url`] and inspect
//! what the browser fetched with [`FixtureSite::requests`] / [`FixtureSite::was_requested`].

pub mod decoy;
pub mod model;
pub mod proxies;
pub mod site;
pub mod solver;
pub mod tls;
pub mod viewer;

pub use decoy::Decoy;
pub use model::{Reply, ScriptedModel};
pub use proxies::{ProxyHit, ProxyKind, TestProxy};
pub use site::{FixtureSite, RequestRecord};
pub use solver::FakeSolver;
pub use tls::TlsSite;
pub use viewer::Viewer;

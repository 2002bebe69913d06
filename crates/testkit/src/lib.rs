//! Test kit for webpilot: a small local fixture website that integration tests serve themselves.
//!
//! Start it with [`FixtureSite::start`], point the browser at [`FixtureSite::url`] and inspect
//! what the browser fetched with [`FixtureSite::requests`] / [`FixtureSite::was_requested`].

pub mod site;

pub use site::{FixtureSite, RequestRecord};

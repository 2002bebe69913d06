//! Black-box tests of the REST contract through the real server, a real Chromium and the local
//! fixture website. One binary, one module per area.

mod helpers;

mod agent;
mod auth;
mod browser;
mod endpoints;
mod persistence;
mod ratelimit;
mod states;
mod validation;

//! Black-box tests of the REST contract through the real server, a real Chromium and the local
//! fixture website. One binary, one module per area.

mod clients;
mod helpers;

mod auth;
mod browser;
mod chat;
mod endpoints;
mod mcp;
mod persistence;
mod ratelimit;
mod states;
mod validation;

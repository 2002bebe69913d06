//! Black-box tests of the REST and WebSocket contract through the real server, a real Chromium and the local
//! fixture website. One binary, one module per area.

mod clients;
mod helpers;
mod sio;

mod agent;
mod agent_answers;
mod auth;
mod billing;
mod browser;
mod browser_faults;
mod cdp;
mod chat;
mod cluster;
mod cluster_limits;
mod cluster_tls;
mod concurrency;
mod console;
mod devtools;
mod edge_cases;
mod egress;
mod endpoints;
mod files;
mod input_rules;
mod live_view;
mod live_view_secrets;
mod mcp;
mod mcp_limits;
mod metrics;
mod net_errors;
mod observation;
mod openapi;
mod persistence;
mod pool;
mod ratelimit;
mod recordings;
mod remote_browser;
mod replay;
mod soak;
mod socket;
mod socket_security;
mod states;
mod validation;
mod webhooks;
mod whep;

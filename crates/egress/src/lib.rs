//! webpilot-egress: the egress proxy each browser context is given as its `proxyServer`. Every request
//! of a session (navigations, iframes, popups from their first request, fetch/XHR, WebSocket, workers)
//! reaches the network only through it; it resolves the host, asks `webpilot_core::egress::decide` about
//! the address it will connect to, and connects to exactly that address or refuses. A session with
//! upstream proxies has the allowed connection chained through the proxy its route names (`upstream`).

mod connect;
mod failure;
mod policy;
mod proxy;
mod resolve;
mod upstream;

pub use failure::EgressFailure;
pub use policy::{Denial, DomainPolicy, Failure};
pub use proxy::{EgressProxy, ProxyListen, EGRESS_DENIED_HEADER};
pub use resolve::resolve;
pub use upstream::{Routes, Upstream};

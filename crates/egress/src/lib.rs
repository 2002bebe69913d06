//! webpilot-egress: the egress proxy each browser context is given as its `proxyServer`. Every request
//! of a session (navigations, iframes, popups from their first request, fetch/XHR, WebSocket, workers)
//! reaches the network only through it; it resolves the host, asks `webpilot_core::egress::decide` about
//! the address it will connect to, and connects to exactly that address or refuses.

mod connect;
mod policy;
mod proxy;

pub use connect::resolve;
pub use policy::{Denial, DomainPolicy, EgressFailure, Failure};
pub use proxy::{EgressProxy, ProxyListen, EGRESS_DENIED_HEADER};

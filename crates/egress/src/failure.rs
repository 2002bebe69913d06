//! Why the egress proxy opened no connection: what a session's policy log keeps and the proxy's
//! `x-webpilot-egress` header says.

use webpilot_core::egress::DenyReason;

/// Why the proxy opened no connection to a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressFailure {
    /// The egress policy refused it; nothing was sent to it.
    Denied(DenyReason),
    /// The host name did not resolve.
    Unresolved,
    /// The host refused the connection.
    Refused,
    /// Any other network failure (a timeout, no route, no answer), as the system put it.
    Unreachable(String),
    /// The session's upstream proxy could not be connected to (`proxy`: `host:port`, or an operator
    /// proxy's name).
    ProxyUnreachable { proxy: String },
    /// The upstream proxy refused the credentials (`detail`: `407`, or the SOCKS5 method).
    ProxyAuth { proxy: String, detail: String },
    /// The upstream proxy could not reach the destination (`why`: its answer).
    ProxyNoRoute { proxy: String, why: String },
}

impl EgressFailure {
    /// The value of the proxy's `x-webpilot-egress` header on its own answer for this failure.
    pub fn header_value(&self) -> &'static str {
        match self {
            EgressFailure::Denied(_) => "denied",
            EgressFailure::Unresolved => "unresolved",
            EgressFailure::Refused => "refused",
            EgressFailure::Unreachable(_) => "unreachable",
            EgressFailure::ProxyUnreachable { .. }
            | EgressFailure::ProxyAuth { .. }
            | EgressFailure::ProxyNoRoute { .. } => "proxy",
        }
    }

    /// What happened, for a person: `could not resolve example.invalid`.
    pub fn describe(&self, host: &str, port: u16) -> String {
        match self {
            EgressFailure::Denied(reason) => format!("{host}: {reason}"),
            EgressFailure::Unresolved => format!("could not resolve {host}"),
            EgressFailure::Refused => format!("the connection to {host}:{port} was refused"),
            EgressFailure::Unreachable(why) => format!("{host}:{port} could not be reached: {why}"),
            EgressFailure::ProxyUnreachable { proxy } => format!("could not connect to the proxy {proxy}"),
            EgressFailure::ProxyAuth { proxy, detail } => {
                format!("the proxy {proxy} refused the credentials ({detail})")
            }
            EgressFailure::ProxyNoRoute { proxy, why } => format!("the proxy {proxy} could not reach {host} ({why})"),
        }
    }
}

//! The WebRTC viewers' tunables (`WhepConfig`): read by the viewers' registry (`whep`) and each peer's
//! loop (`peer`).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// Tunables of the WebRTC viewers.
#[derive(Debug, Clone)]
pub struct WhepConfig {
    /// The address viewers reach the service's UDP ports on (its host ICE candidate).
    pub candidate_ip: IpAddr,
    /// Target bit rate of each viewer's VP8 track.
    pub bitrate_kbps: u32,
    /// A peer that has not connected this long after its answer is dropped.
    pub connect_timeout: Duration,
    /// Most WebRTC viewers of one session (each has its own encoder).
    pub max_per_session: usize,
    /// Places among those that read-only (watch) viewers may never take: the owner can always watch.
    pub reserved_for_control: usize,
    /// A picture that does not change is sent again this often while a viewer is connected.
    pub repeat: Duration,
    /// A connected peer that sends nothing (no consent checks, no RTCP) this long is gone: a player
    /// closed without `DELETE` must not keep an encoder running.
    pub silence_timeout: Duration,
}

impl Default for WhepConfig {
    fn default() -> Self {
        WhepConfig {
            candidate_ip: default_candidate_ip(),
            bitrate_kbps: 1500,
            connect_timeout: Duration::from_secs(20),
            max_per_session: 4,
            reserved_for_control: 1,
            repeat: Duration::from_secs(1),
            silence_timeout: Duration::from_secs(10),
        }
    }
}

/// The address of the interface the default route leaves by (no packet is sent to find it), or
/// loopback on a machine without one.
pub fn default_candidate_ip() -> IpAddr {
    let probe = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|s| s.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).map(|_| s))
        .and_then(|s| s.local_addr());
    match probe {
        Ok(addr) if !addr.ip().is_unspecified() => addr.ip(),
        _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

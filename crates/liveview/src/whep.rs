//! The WebRTC (WHEP, RFC 9725) viewers of live views. Each accepted SDP offer becomes one peer: an
//! ICE-lite `str0m` connection on its own UDP port with a host candidate only, sending the session's
//! composed frames as a VP8 track (a still picture is sent again every `repeat`, since many players
//! show a frame only once the next one arrives). A peer runs while its viewer is connected and ends on
//! `DELETE`, on ICE disconnection, when it never connects or goes silent, or when the session ends; its
//! encoder goes with it. Viewers by a read-only link leave places for the owner's.

use crate::feed::Feed;
use crate::peer::PeerLoop;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Once};
use std::time::Instant;
use str0m::change::SdpOffer;
use str0m::{Candidate, RtcConfig};
use tokio::net::UdpSocket;
use tokio::task::AbortHandle;

pub use crate::whep_config::{default_candidate_ip, WhepConfig};

/// Why an offer was refused.
#[derive(Debug, thiserror::Error)]
pub enum WhepError {
    #[error("the SDP offer cannot be read: {0}")]
    BadOffer(String),
    #[error("the SDP offer does not ask to receive video")]
    NoVideo,
    #[error("the offer cannot be answered: {0}")]
    Rtc(String),
    #[error("this session already has {0} WebRTC viewers")]
    TooMany(usize),
    #[error("read-only links may hold at most {0} of this session's WebRTC viewers (a place is kept for the owner)")]
    TooManyWatching(usize),
    #[error("no UDP port for the peer: {0}")]
    Socket(#[from] std::io::Error),
}

/// An accepted offer: the SDP answer and the id of the new WHEP resource.
#[derive(Debug)]
pub struct WhepAnswer {
    pub resource: String,
    pub sdp: String,
}

/// What a viewer's token lets it do: the owner's link drives, a shared link only watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewerScope {
    Control,
    Watch,
}

struct Peer {
    session: String,
    scope: ViewerScope,
    task: AbortHandle,
}

/// Every WebRTC viewer of every session.
#[derive(Default)]
pub struct WhepViewers {
    config: WhepConfig,
    peers: Arc<Mutex<HashMap<String, Peer>>>,
}

/// Removes a peer from the table when its task ends, however it ends.
struct Deregister {
    peers: Arc<Mutex<HashMap<String, Peer>>>,
    resource: String,
}

impl Drop for Deregister {
    fn drop(&mut self) {
        self.peers.lock().remove(&self.resource);
        tracing::debug!("a WebRTC viewer ended");
    }
}

fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| str0m::crypto::from_feature_flags().install_process_default());
}

impl WhepViewers {
    pub fn new(config: WhepConfig) -> Self {
        WhepViewers { config, peers: Arc::new(Mutex::new(HashMap::new())) }
    }

    /// Whether one more viewer of `scope` fits beside `session`'s in `peers`.
    fn room(&self, peers: &HashMap<String, Peer>, session: &str, scope: ViewerScope) -> Result<(), WhepError> {
        let of_session = || peers.values().filter(|p| p.session == session);
        let max = self.config.max_per_session;
        if of_session().count() >= max {
            return Err(WhepError::TooMany(max));
        }
        let watch_max = max.saturating_sub(self.config.reserved_for_control);
        if scope == ViewerScope::Watch && of_session().filter(|p| p.scope == ViewerScope::Watch).count() >= watch_max {
            return Err(WhepError::TooManyWatching(watch_max));
        }
        Ok(())
    }

    /// Answers `offer` for a viewer of `session`'s `feed` with `scope` and starts its peer.
    pub async fn offer(
        &self,
        session: &str,
        scope: ViewerScope,
        feed: Arc<Feed>,
        offer: &str,
    ) -> Result<WhepAnswer, WhepError> {
        install_crypto();
        self.room(&self.peers.lock(), session, scope)?;
        let parsed = SdpOffer::from_sdp_string(offer).map_err(|e| WhepError::BadOffer(e.to_string()))?;
        if !offer.lines().any(|l| l.starts_with("m=video")) {
            return Err(WhepError::NoVideo);
        }
        let socket = UdpSocket::bind(SocketAddr::new(self.config.candidate_ip, 0)).await?;
        let local = socket.local_addr()?;
        let mut rtc = RtcConfig::new().set_ice_lite(true).clear_codecs().enable_vp8(true).build(Instant::now());
        let candidate = Candidate::host(local, "udp").map_err(|e| WhepError::Rtc(e.to_string()))?;
        rtc.add_local_candidate(candidate);
        let answer = rtc.sdp_api().accept_offer(parsed).map_err(|e| WhepError::Rtc(e.to_string()))?;
        let resource = random_id();
        let mut peers = self.peers.lock();
        // Checked again under the lock that inserts: offers made at once cannot both take the last place.
        self.room(&peers, session, scope)?;
        let guard = Deregister { peers: self.peers.clone(), resource: resource.clone() };
        let peer = PeerLoop::new(rtc, socket, local, feed, &self.config);
        let task = webpilot_tasks::spawn_owned("whep peer", async move {
            let _guard = guard;
            peer.run().await;
        });
        peers.insert(resource.clone(), Peer { session: session.to_owned(), scope, task: task.abort_handle() });
        tracing::debug!("a WebRTC viewer joined");
        Ok(WhepAnswer { resource, sdp: answer.to_sdp_string() })
    }

    /// Ends the viewer `resource` of `session`; false when there is no such viewer.
    pub fn end(&self, session: &str, resource: &str) -> bool {
        let mut peers = self.peers.lock();
        match peers.get(resource) {
            Some(peer) if peer.session == session => {
                if let Some(peer) = peers.remove(resource) {
                    peer.task.abort();
                }
                true
            }
            _ => false,
        }
    }

    /// How many WebRTC viewers (each with its encoder) are running now.
    pub fn active(&self) -> usize {
        self.peers.lock().len()
    }
}

/// 128 random bits in hex: a resource id is what lets its holder end the viewer.
fn random_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

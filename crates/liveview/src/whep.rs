//! The WebRTC (WHEP, RFC 9725) viewers of live views. Each accepted SDP offer becomes one peer: an
//! ICE-lite `str0m` connection on its own UDP port with a host candidate only, sending the session's
//! composed frames as a VP8 track. A peer runs while its viewer is connected and ends on `DELETE`, on
//! ICE disconnection, when it never connects or goes silent, or when the session ends; its encoder goes
//! with it.

use crate::feed::{Feed, Frame};
use crate::vp8::{EncodedFrame, Vp8Encoder};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};
use str0m::change::SdpOffer;
use str0m::format::Codec;
use str0m::media::{MediaKind, MediaTime, Mid};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, IceConnectionState, Input, Output, Rtc, RtcConfig};
use tokio::net::UdpSocket;
use tokio::task::AbortHandle;

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
    #[error("no UDP port for the peer: {0}")]
    Socket(#[from] std::io::Error),
}

/// An accepted offer: the SDP answer and the id of the new WHEP resource.
#[derive(Debug)]
pub struct WhepAnswer {
    pub resource: String,
    pub sdp: String,
}

struct Peer {
    session: String,
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
        self.peers.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.resource);
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

    /// Answers `offer` for a viewer of `session`'s `feed` and starts its peer.
    pub async fn offer(&self, session: &str, feed: Arc<Feed>, offer: &str) -> Result<WhepAnswer, WhepError> {
        install_crypto();
        let watching =
            self.peers.lock().unwrap_or_else(|p| p.into_inner()).values().filter(|p| p.session == session).count();
        if watching >= self.config.max_per_session {
            return Err(WhepError::TooMany(self.config.max_per_session));
        }
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
        let guard = Deregister { peers: self.peers.clone(), resource: resource.clone() };
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let peer = PeerLoop::new(rtc, socket, local, feed, &self.config);
        let task = tokio::spawn(async move {
            let _guard = guard;
            peer.run().await;
        });
        peers.insert(resource.clone(), Peer { session: session.to_owned(), task: task.abort_handle() });
        tracing::debug!("a WebRTC viewer joined");
        Ok(WhepAnswer { resource, sdp: answer.to_sdp_string() })
    }

    /// Ends the viewer `resource` of `session`; false when there is no such viewer.
    pub fn end(&self, session: &str, resource: &str) -> bool {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
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
        self.peers.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// 128 random bits in hex: a resource id is what lets its holder end the viewer.
fn random_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// One viewer's connection: the sans-IO `Rtc` driven by its socket, its timers and the feed.
struct PeerLoop {
    rtc: Rtc,
    socket: UdpSocket,
    local: SocketAddr,
    feed: Arc<Feed>,
    bitrate_kbps: u32,
    connect_timeout: Duration,
    silence_timeout: Duration,
    last_heard: Instant,
    video: Option<Mid>,
    connected: bool,
    encoder: Option<Vp8Encoder>,
    want_keyframe: bool,
    started: Instant,
}

impl PeerLoop {
    fn new(rtc: Rtc, socket: UdpSocket, local: SocketAddr, feed: Arc<Feed>, config: &WhepConfig) -> Self {
        PeerLoop {
            rtc,
            socket,
            local,
            feed,
            bitrate_kbps: config.bitrate_kbps,
            connect_timeout: config.connect_timeout,
            silence_timeout: config.silence_timeout,
            last_heard: Instant::now(),
            video: None,
            connected: false,
            encoder: None,
            want_keyframe: true,
            started: Instant::now(),
        }
    }

    async fn run(mut self) {
        let mut frames = self.feed.frames();
        let mut buf = vec![0u8; 2048];
        loop {
            let Some(deadline) = self.drain(&mut frames).await else { return };
            if !self.connected && self.started.elapsed() > self.connect_timeout {
                tracing::debug!("a WebRTC viewer never connected");
                return;
            }
            if self.connected && self.last_heard.elapsed() > self.silence_timeout {
                tracing::debug!("a WebRTC viewer went silent");
                return;
            }
            let wait = deadline.saturating_duration_since(Instant::now()).min(Duration::from_secs(1));
            let input_result = tokio::select! {
                received = self.socket.recv_from(&mut buf) => match received {
                    Ok((n, source)) => match buf[..n].try_into() {
                        Ok(contents) => {
                            self.last_heard = Instant::now();
                            self.rtc.handle_input(Input::Receive(
                            Instant::now(),
                            Receive { proto: Protocol::Udp, source, destination: self.local, contents },
                        ))
                        }
                        // Not STUN, DTLS or RTP: ignored.
                        Err(_) => Ok(()),
                    },
                    Err(e) => {
                        tracing::debug!(error = %e, "a WebRTC viewer's socket failed");
                        return;
                    }
                },
                _ = tokio::time::sleep(wait) => self.rtc.handle_input(Input::Timeout(Instant::now())),
                changed = frames.changed() => {
                    if changed.is_err() {
                        // The session ended.
                        return;
                    }
                    let frame = frames.borrow_and_update().clone();
                    if let Some(frame) = frame {
                        self.send(frame).await;
                    }
                    Ok(())
                }
            };
            if let Err(e) = input_result {
                tracing::debug!(error = %e, "a WebRTC viewer's connection failed");
                return;
            }
        }
    }

    /// Sends what the connection has to send and handles its events; returns when it next needs a
    /// timeout, or `None` when the connection is over.
    async fn drain(&mut self, frames: &mut tokio::sync::watch::Receiver<Option<Frame>>) -> Option<Instant> {
        loop {
            if !self.rtc.is_alive() {
                return None;
            }
            match self.rtc.poll_output() {
                Ok(Output::Timeout(at)) => return Some(at),
                Ok(Output::Transmit(t)) => {
                    let _ = self.socket.send_to(&t.contents, t.destination).await;
                }
                Ok(Output::Event(event)) => match event {
                    Event::Connected => {
                        self.connected = true;
                        // The latest picture goes out at once, as a keyframe.
                        self.want_keyframe = true;
                        frames.mark_changed();
                    }
                    Event::IceConnectionStateChange(IceConnectionState::Disconnected) => return None,
                    Event::MediaAdded(m) if m.kind == MediaKind::Video => self.video = Some(m.mid),
                    Event::KeyframeRequest(_) => {
                        self.want_keyframe = true;
                        frames.mark_changed();
                    }
                    _ => {}
                },
                Err(e) => {
                    tracing::debug!(error = %e, "a WebRTC viewer's connection failed");
                    return None;
                }
            }
        }
    }

    /// Encodes `frame` (off the async threads) and writes it to the video track.
    async fn send(&mut self, frame: Frame) {
        let Some(mid) = self.video.filter(|_| self.connected) else { return };
        let encoder = match self.encoder.take() {
            Some(e) => e,
            None => {
                let (w, h) = frame.dimensions();
                match Vp8Encoder::new(w, h, self.bitrate_kbps) {
                    Ok(e) => e,
                    Err(e) => {
                        tracing::warn!(error = %e, "no VP8 encoder for a WebRTC viewer");
                        return;
                    }
                }
            }
        };
        let keyframe = std::mem::take(&mut self.want_keyframe);
        let at_ms = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let encoded = tokio::task::spawn_blocking(move || {
            let mut encoder = encoder;
            let out = encoder.encode(frame.i420(), at_ms, keyframe);
            (encoder, out)
        })
        .await;
        let (encoder, out) = match encoded {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "encoding a WebRTC frame failed");
                return;
            }
        };
        self.encoder = Some(encoder);
        let frames: Vec<EncodedFrame> = match out {
            Ok(f) => f,
            Err(e) => {
                tracing::debug!(error = %e, "a WebRTC frame was skipped");
                return;
            }
        };
        let rtp_time =
            MediaTime::from_millis(u64::try_from(at_ms).unwrap_or(0)).rebase(str0m::media::Frequency::NINETY_KHZ);
        for encoded in frames {
            let Some(writer) = self.rtc.writer(mid) else { return };
            let Some(pt) = writer.payload_params().find(|p| p.spec().codec == Codec::Vp8).map(|p| p.pt()) else {
                return;
            };
            if let Err(e) = writer.write(pt, Instant::now(), rtp_time, encoded.data) {
                tracing::debug!(error = %e, "a WebRTC frame was not written");
            }
        }
    }
}

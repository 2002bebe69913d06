//! One WebRTC viewer's connection (made by `whep`): the sans-IO `str0m` `Rtc` driven by its UDP socket,
//! its timers and the session's feed. str0m's run-loop rule is kept: after every input and after every
//! frame written, `poll_output` is drained (packets sent, events handled) before anything else is fed
//! in. A picture that stands still is sent again every `repeat`: many players (aiortc, any whose jitter
//! buffer releases a frame when the next one arrives) show nothing of a single frame.

use crate::feed::{Feed, Frame};
use crate::vp8::{EncodedFrame, Vp8Encoder};
use crate::whep_config::WhepConfig;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use str0m::format::Codec;
use str0m::media::{MediaKind, MediaTime, Mid};
use str0m::net::{Protocol, Receive};
use str0m::{Event, IceConnectionState, Input, Output, Rtc};
use tokio::net::UdpSocket;

pub(crate) struct PeerLoop {
    rtc: Rtc,
    socket: UdpSocket,
    local: SocketAddr,
    feed: Arc<Feed>,
    bitrate_kbps: u32,
    connect_timeout: Duration,
    silence_timeout: Duration,
    repeat: Duration,
    last_heard: Instant,
    video: Option<Mid>,
    connected: bool,
    encoder: Option<Vp8Encoder>,
    want_keyframe: bool,
    /// The latest picture is to go out now (the viewer connected or asked for a keyframe, or the
    /// picture stood still for `repeat`).
    want_frame: bool,
    /// The connection is over (seen while draining).
    over: bool,
    last_sent: Instant,
    started: Instant,
}

impl PeerLoop {
    pub(crate) fn new(rtc: Rtc, socket: UdpSocket, local: SocketAddr, feed: Arc<Feed>, config: &WhepConfig) -> Self {
        PeerLoop {
            rtc,
            socket,
            local,
            feed,
            bitrate_kbps: config.bitrate_kbps,
            connect_timeout: config.connect_timeout,
            silence_timeout: config.silence_timeout,
            repeat: config.repeat,
            last_heard: Instant::now(),
            video: None,
            connected: false,
            encoder: None,
            want_keyframe: true,
            want_frame: false,
            over: false,
            last_sent: Instant::now(),
            started: Instant::now(),
        }
    }

    /// Whether frames can be written (connected, with the video track known).
    fn streaming(&self) -> bool {
        self.connected && self.video.is_some()
    }

    pub(crate) async fn run(mut self) {
        let mut frames = self.feed.frames();
        let mut buf = vec![0u8; 2048];
        loop {
            let Some(deadline) = self.drain().await else { return };
            if !self.connected && self.started.elapsed() > self.connect_timeout {
                tracing::debug!("a WebRTC viewer never connected");
                return;
            }
            if self.connected && self.last_heard.elapsed() > self.silence_timeout {
                tracing::debug!("a WebRTC viewer went silent");
                return;
            }
            if std::mem::take(&mut self.want_frame) {
                let frame = frames.borrow_and_update().clone();
                if let Some(frame) = frame {
                    self.send(frame).await;
                }
                continue;
            }
            let wait = deadline.saturating_duration_since(Instant::now()).min(Duration::from_secs(1));
            let repeat_at = tokio::time::Instant::from_std(self.last_sent + self.repeat);
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
                // The picture stood still: the latest frame again (a few bytes of VP8 when unchanged).
                _ = tokio::time::sleep_until(repeat_at), if self.streaming() => {
                    self.want_frame = true;
                    Ok(())
                }
                changed = frames.changed() => {
                    if changed.is_err() {
                        // The session ended.
                        return;
                    }
                    self.want_frame = true;
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
    async fn drain(&mut self) -> Option<Instant> {
        loop {
            if self.over || !self.rtc.is_alive() {
                self.over = true;
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
                        self.want_frame = true;
                    }
                    Event::IceConnectionStateChange(IceConnectionState::Disconnected) => self.over = true,
                    Event::MediaAdded(m) if m.kind == MediaKind::Video => self.video = Some(m.mid),
                    Event::KeyframeRequest(_) => {
                        self.want_keyframe = true;
                        self.want_frame = true;
                    }
                    _ => {}
                },
                Err(e) => {
                    tracing::debug!(error = %e, "a WebRTC viewer's connection failed");
                    self.over = true;
                }
            }
        }
    }

    /// Encodes `frame` (off the async threads) and writes it to the video track, draining the
    /// connection after each encoded frame it writes.
    async fn send(&mut self, frame: Frame) {
        let Some(mid) = self.video.filter(|_| self.connected) else { return };
        // Counted from the attempt, so a picture that cannot be encoded is not retried in a busy loop.
        self.last_sent = Instant::now();
        let Some(encoder) = self.encoder.take().or_else(|| self.new_encoder(&frame)) else { return };
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
            // str0m's rule: what one write produced is sent before the next write.
            if self.drain().await.is_none() {
                return;
            }
        }
    }

    /// A VP8 encoder for pictures of `frame`'s size (`None`, logged, when libvpx refuses).
    fn new_encoder(&self, frame: &Frame) -> Option<Vp8Encoder> {
        let (w, h) = frame.dimensions();
        Vp8Encoder::new(w, h, self.bitrate_kbps)
            .map_err(|e| tracing::warn!(error = %e, "no VP8 encoder for a WebRTC viewer"))
            .ok()
    }
}

// The watched session's live video: WebRTC (WHEP) first, the MJPEG stream as the fallback. A WebRTC
// connection lost later (ICE failed, or disconnected past a short grace, or closed by the service) is
// negotiated again with backoff, showing "reconnecting"; when that does not work the MJPEG stream takes over.
import { $, state, log } from './ui.js';

/** How long a `disconnected` connection may take to come back by itself before it is renegotiated. */
const GRACE_MS = 2000;
/** Waits before each new negotiation after a loss. */
const BACKOFF_MS = [250, 1000, 2000, 4000];

const pause = (ms) => new Promise((done) => { setTimeout(done, ms); });

export async function watch(streaming) {
  const session = state.session;
  try {
    await watchWebRtc(streaming.webRTCURL);
    $('video-mode').textContent = 'WebRTC';
    follow(state.pc, streaming, session);
  } catch (e) {
    mjpeg(streaming, `WebRTC unavailable (${e.message})`);
  }
}

/** Shows the MJPEG stream in place of WebRTC. */
function mjpeg(streaming, why) {
  log('video', `${why}; using the MJPEG stream`);
  drop();
  $('video').hidden = true;
  $('mjpeg').hidden = false;
  $('mjpeg').src = streaming.webViewURL;
  $('video-mode').textContent = 'MJPEG';
}

/** Closes the current peer connection and ends its WHEP resource (when the service still holds it). */
function drop() {
  if (state.whepResource) {
    fetch(state.whepResource, { method: 'DELETE' }).catch(() => {});
    state.whepResource = null;
  }
  if (state.pc) { state.pc.close(); state.pc = null; }
}

/** Watches `pc` for its loss and renegotiates once it is lost (never after the page left the session). */
function follow(pc, streaming, session) {
  let grace = null;
  let gone = false;
  const lost = (why) => {
    clearTimeout(grace);
    if (gone || state.pc !== pc || state.session !== session || state.ended) return;
    gone = true;
    reconnect(streaming, session, why);
  };
  const look = () => {
    const s = pc.connectionState;
    const ice = pc.iceConnectionState;
    if (s === 'failed' || s === 'closed' || ice === 'failed' || ice === 'closed') lost(`connection ${s}`);
    else if (s === 'disconnected' || ice === 'disconnected') {
      if (!grace) grace = setTimeout(() => lost('connection disconnected'), GRACE_MS);
    } else { clearTimeout(grace); grace = null; }
  };
  pc.addEventListener('connectionstatechange', look);
  pc.addEventListener('iceconnectionstatechange', look);
  // The service closing its side ends the DTLS transport before ICE notices.
  const transport = pc.getReceivers().map((r) => r.transport).find(Boolean);
  if (transport) {
    transport.addEventListener('statechange', () => {
      if (transport.state === 'closed' || transport.state === 'failed') lost(`transport ${transport.state}`);
    });
  }
}

async function reconnect(streaming, session, why) {
  log('video', `WebRTC connection lost (${why}): reconnecting`);
  $('video-mode').textContent = 'reconnecting…';
  drop();
  for (const wait of BACKOFF_MS) {
    await pause(wait);
    if (state.session !== session || state.ended) return;
    try {
      await watchWebRtc(streaming.webRTCURL);
      // The page moved on meanwhile: that connection is the next session's business (leave() closed it).
      if (state.session !== session || state.ended) return;
      $('video-mode').textContent = 'WebRTC';
      log('video', 'WebRTC reconnected');
      follow(state.pc, streaming, session);
      return;
    } catch (e) {
      if (state.session !== session || state.ended) return;
      log('video', `WebRTC reconnect failed (${e.message})`);
      drop();
    }
  }
  if (state.session !== session || state.ended) return;
  mjpeg(streaming, 'WebRTC could not reconnect');
}

async function watchWebRtc(url) {
  const pc = new RTCPeerConnection();
  state.pc = pc;
  pc.addTransceiver('video', { direction: 'recvonly' });
  const video = $('video');
  video.hidden = false;
  $('mjpeg').hidden = true;
  $('mjpeg').removeAttribute('src');
  pc.ontrack = (e) => { video.srcObject = e.streams[0] || new MediaStream([e.track]); video.play().catch(() => {}); };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((done) => {
    if (pc.iceGatheringState === 'complete') { done(); return; }
    pc.addEventListener('icegatheringstatechange', () => { if (pc.iceGatheringState === 'complete') done(); });
    setTimeout(done, 3000);
  });
  const resp = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/sdp' }, body: pc.localDescription.sdp });
  if (resp.status !== 201) throw new Error(`the WHEP endpoint answered ${resp.status}`);
  const location = resp.headers.get('Location');
  if (location) state.whepResource = new URL(location, url).href;
  await pc.setRemoteDescription({ type: 'answer', sdp: await resp.text() });
  await new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error('no connection in 10 s')), 10000);
    pc.addEventListener('connectionstatechange', () => {
      if (pc.connectionState === 'connected') { clearTimeout(timer); done(); }
      if (pc.connectionState === 'failed') { clearTimeout(timer); fail(new Error('the connection failed')); }
    });
  });
}

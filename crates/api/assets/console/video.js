// The watched session's live video: WebRTC (WHEP) first, the MJPEG stream as the fallback.
import { $, state, log } from './ui.js';

export async function watch(streaming) {
  try {
    await watchWebRtc(streaming.webRTCURL);
    $('video-mode').textContent = 'WebRTC';
  } catch (e) {
    log('video', `WebRTC unavailable (${e.message}); using the MJPEG stream`);
    if (state.pc) { state.pc.close(); state.pc = null; }
    $('video').hidden = true;
    $('mjpeg').hidden = false;
    $('mjpeg').src = streaming.webViewURL;
    $('video-mode').textContent = 'MJPEG';
  }
}

async function watchWebRtc(url) {
  const pc = new RTCPeerConnection();
  state.pc = pc;
  pc.addTransceiver('video', { direction: 'recvonly' });
  const video = $('video');
  video.hidden = false;
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

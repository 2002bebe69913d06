//! `/whep-player`: a WebRTC WHEP player for the live-view tests, run in a real (headless) Chromium.
//! `startWhep(url)` posts a receive-only video offer (ICE gathered first, no trickle) and applies the
//! answer; `whepStats()` reports decoded frames, the codec, the video's size and two sampled pixels
//! (one in the drawn band, one in the page part) as `[r, g, b]`.

use axum::response::Html;

pub(crate) async fn whep_player() -> Html<&'static str> {
    Html(
        r#"<!doctype html><html><head><title>WHEP player</title></head><body style="margin:0">
<video id="v" autoplay muted playsinline></video>
<canvas id="c" width="1024" height="600" style="display:none"></canvas>
<script>
window.whep = {};
window.startWhep = async (url) => {
  const pc = new RTCPeerConnection();
  window.whep.pc = pc;
  pc.addTransceiver('video', { direction: 'recvonly' });
  pc.ontrack = (e) => {
    const v = document.getElementById('v');
    v.srcObject = e.streams[0] || new MediaStream([e.track]);
    v.play().catch(() => {});
  };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((done) => {
    if (pc.iceGatheringState === 'complete') return done();
    pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && done());
    setTimeout(done, 3000);
  });
  const resp = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/sdp' }, body: pc.localDescription.sdp });
  window.whep.status = resp.status;
  window.whep.location = resp.headers.get('Location');
  window.whep.contentType = resp.headers.get('Content-Type');
  const text = await resp.text();
  if (resp.status !== 201) { window.whep.error = text; return resp.status; }
  await pc.setRemoteDescription({ type: 'answer', sdp: text });
  return resp.status;
};
window.whepStats = async () => {
  const pc = window.whep.pc;
  const out = { framesDecoded: 0, codec: '', width: 0, height: 0, band: null, page: null,
                connection: pc ? pc.connectionState : 'none', status: window.whep.status,
                location: window.whep.location, contentType: window.whep.contentType };
  if (!pc) return out;
  const stats = await pc.getStats();
  stats.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'video') out.framesDecoded = s.framesDecoded || 0;
    if (s.type === 'codec' && s.mimeType && s.mimeType.startsWith('video/')) out.codec = s.mimeType;
  });
  const v = document.getElementById('v');
  out.width = v.videoWidth; out.height = v.videoHeight;
  if (v.videoWidth) {
    const ctx = document.getElementById('c').getContext('2d');
    ctx.drawImage(v, 0, 0, 1024, 600);
    const px = (x, y) => Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3));
    out.band = px(1015, 2); out.page = px(500, 400);
  }
  return out;
};
</script></body></html>"#,
    )
}

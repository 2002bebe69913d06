"""A WHEP (RFC 9725) test client on aiortc, a WebRTC stack that is not Chromium's: its jitter buffer
releases a video frame only when the next one arrives, as many players' do.

Usage:
  whep_client.py frame URL SECONDS [SAVE COUNT]
      Posts an offer to the WHEP URL (a live view's webRTCURL), connects, and waits at most SECONDS for one
      decoded video frame (or COUNT of them). Prints {"status", "frames", "width", "height", "waitedMs"};
      "frames" is how many were decoded in time. With SAVE, the last one is written there as raw RGB
      (width x height x 3 bytes, rows top to bottom).
  whep_client.py offers URL [URL ...]
      Posts one offer to each URL in turn and connects every one that is answered 201 (they stay
      connected until all are posted). Prints {"statuses": [...], "codes": [...]} (the error code of each
      refused offer, else null), then DELETEs the viewers it made.
"""

import asyncio
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from aiortc import RTCPeerConnection, RTCSessionDescription


def post_offer(url, sdp):
    """POSTs the SDP offer; returns (status, body text, Location header)."""
    req = urllib.request.Request(url, data=sdp.encode(), method="POST",
                                 headers={"Content-Type": "application/sdp"})
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            return resp.status, resp.read().decode(), resp.headers.get("Location")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), None


def delete(url, location):
    if not location:
        return
    target = urllib.parse.urljoin(url, location)
    try:
        urllib.request.urlopen(urllib.request.Request(target, method="DELETE"), timeout=15).close()
    except urllib.error.URLError:
        pass


async def connect(url):
    """Makes a receive-only video peer and offers it; returns (pc, status, body, location)."""
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")
    await pc.setLocalDescription(await pc.createOffer())
    status, body, location = await asyncio.to_thread(post_offer, url, pc.localDescription.sdp)
    if status == 201:
        await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))
    return pc, status, body, location


def save_rgb(decoded, path):
    rgb = decoded.reformat(format="rgb24")
    plane = rgb.planes[0]
    data = bytes(plane)
    row = rgb.width * 3
    with open(path, "wb") as f:
        for y in range(rgb.height):
            f.write(data[y * plane.line_size:y * plane.line_size + row])


async def frame(url, seconds, save=None, count=1):
    tracks = asyncio.Queue()
    began = time.monotonic()
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")
    pc.on("track", lambda track: tracks.put_nowait(track) if track.kind == "video" else None)
    await pc.setLocalDescription(await pc.createOffer())
    status, body, location = await asyncio.to_thread(post_offer, url, pc.localDescription.sdp)
    result = {"status": status, "frames": 0, "width": None, "height": None}
    if status == 201:
        await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))

        async def frames():
            track = await tracks.get()
            while result["frames"] < count:
                decoded = await track.recv()
                result.update(frames=result["frames"] + 1, width=decoded.width, height=decoded.height)
                if save and result["frames"] == count:
                    save_rgb(decoded, save)

        try:
            await asyncio.wait_for(frames(), timeout=seconds)
        except asyncio.TimeoutError:
            pass
    else:
        result["body"] = body
    result["waitedMs"] = int((time.monotonic() - began) * 1000)
    await pc.close()
    await asyncio.to_thread(delete, url, location)
    return result


async def offers(urls):
    made, statuses, codes = [], [], []
    for url in urls:
        pc, status, body, location = await connect(url)
        made.append((pc, url, location))
        statuses.append(status)
        code = None
        if status != 201:
            try:
                code = json.loads(body).get("code")
            except ValueError:
                code = body[:200]
        codes.append(code)
    for pc, url, location in made:
        await pc.close()
        await asyncio.to_thread(delete, url, location)
    return {"statuses": statuses, "codes": codes}


def main():
    mode = sys.argv[1]
    if mode == "frame":
        save = sys.argv[4] if len(sys.argv) > 4 else None
        count = int(sys.argv[5]) if len(sys.argv) > 5 else 1
        result = asyncio.run(frame(sys.argv[2], float(sys.argv[3]), save, count))
    elif mode == "offers":
        result = asyncio.run(offers(sys.argv[2:]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

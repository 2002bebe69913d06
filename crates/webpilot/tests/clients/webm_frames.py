"""Decodes a WebM video with PyAV (FFmpeg's decoders, independent of the service's encoder) and prints,
as one JSON line, its size, duration and, for each decoded frame, its time and the colour its page area
(below the 155-pixel band) shows at a few points: "red", "green", "blue", or "other"; and "box", the left
edge of the dark box `/paint?animate=1` moves across its row (null where there is none).

Usage: webm_frames.py <path>
"""

import json
import sys

import av

POINTS = [(300, 300), (700, 450), (900, 590)]
COLOURS = {"red": (255, 0, 0), "green": (0, 170, 0), "blue": (0, 0, 255)}


def near(p, c):
    return all(abs(a - b) < 40 for a, b in zip(p, c))


def colour(frame):
    rgb = frame.reformat(format="rgb24")
    plane = rgb.planes[0]
    data = bytes(plane)
    pixels = []
    for x, y in POINTS:
        i = y * plane.line_size + x * 3
        pixels.append(tuple(data[i : i + 3]))
    for name, c in COLOURS.items():
        if all(near(p, c) for p in pixels):
            return name
    return "other"


BOX_ROW = 155 + 160


def box(frame):
    rgb = frame.reformat(format="rgb24")
    plane = rgb.planes[0]
    data = bytes(plane)
    start = BOX_ROW * plane.line_size
    for x in range(frame.width):
        if all(v < 80 for v in data[start + x * 3 : start + x * 3 + 3]):
            return x
    return None


def main():
    with av.open(sys.argv[1]) as container:
        stream = container.streams.video[0]
        frames = []
        for frame in container.decode(stream):
            t = float(frame.pts * frame.time_base) if frame.pts is not None else None
            frames.append({"t": t, "width": frame.width, "height": frame.height, "page": colour(frame), "box": box(frame)})
    last = frames[-1]["t"] if frames else 0
    print(json.dumps({"codec": stream.codec_context.name, "frames": frames, "lastFrameAt": last}))


if __name__ == "__main__":
    main()

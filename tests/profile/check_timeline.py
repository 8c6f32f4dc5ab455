#!/usr/bin/env python3
# scripts/timeline on two small synthetic traces: a valid PNG (signature,
# IHDR, CRCs, every row there), bare activity above and replayed below; and
# on traces with nothing in them.
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

timeline = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="cgraft-timeline-")
EAGER, REPLAYED = (59, 117, 175), (239, 134, 54)


def write(path, rows, junk=False):
    with open(path, "w") as f:
        f.write("# cgraft profile trace: start_ns end_ns kind graph stream name\n")
        if junk:
            f.write("not a line of a trace\n")
        for r in rows:
            f.write(" ".join(str(v) for v in r) + "\n")


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
    pos, chunks = 8, []
    while pos < len(data):
        n, tag = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(tag + body) & 0xffffffff, f"CRC of {tag}"
        chunks.append((tag, body))
        pos += 12 + n
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", [c[0] for c in chunks]
    w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, interlace) == (8, 2, 0), "8-bit RGB, not interlaced"
    raw = zlib.decompress(b"".join(b for t, b in chunks if t == b"IDAT"))
    assert len(raw) == h * (1 + 3 * w), "every row"
    rows = []
    for y in range(h):
        line = raw[y * (1 + 3 * w):(y + 1) * (1 + 3 * w)]
        assert line[0] == 0, "filter type 0"
        rows.append(line[1:])
    return w, h, rows


def rows_with(rows, colour):
    c = bytes(colour)
    return [y for y, r in enumerate(rows) if any(r[i:i + 3] == c for i in range(0, len(r), 3))]


def run(bare, cg, out, *extra):
    p = subprocess.run([sys.executable, timeline, bare, cg, "-o", out] + list(extra), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = re.search(r"\((\d+)x(\d+)\)", p.stdout)
    assert m, p.stdout
    return int(m.group(1)), int(m.group(2)), p


# Bare: kernels of 2 us every 5 us on stream 7, a copy on stream 8. Under
# cgraft: kernels of 2 us every 2.5 us in graphs, two streams.
bare = [(1000 + 5000 * i, 3000 + 5000 * i, "kernel", 0, 7, "k") for i in range(400)] + \
       [(1500 + 100000 * i, 9000 + 100000 * i, "memcpy", 0, 8, "HtoD") for i in range(20)]
cg = [(7000 + 2500 * i, 9000 + 2500 * i, "kernel", 1, 7 + i % 2, "k") for i in range(800)]
write(os.path.join(tmp, "bare.txt"), bare, junk=True)
write(os.path.join(tmp, "cg.txt"), cg[::-1])  # any order
out = os.path.join(tmp, "t.png")
w, h, p = run(os.path.join(tmp, "bare.txt"), os.path.join(tmp, "cg.txt"), out, "--window-us", "100", "--title", "test")
assert "1 lines not understood" in p.stderr, p.stderr
pw, ph, rows = read_png(out)
assert (pw, ph) == (w, h) and w == 1600 and h > 100, (pw, ph, w, h)
legend = 40  # the legend shows both colours near the top
blue, orange = [y for y in rows_with(rows, EAGER) if y > legend], [y for y in rows_with(rows, REPLAYED) if y > legend]
assert blue and orange, "both runs drawn"
assert max(blue) < min(orange), f"bare above cgraft: blue rows {blue[:3]}..{blue[-3:]}, orange {orange[:3]}.."
# The window is 100 us: in the bare run, ~20 kernels, each a box with a gap.
r = rows[blue[len(blue) // 2]]
boxes = sum(1 for i in range(3, len(r), 3) if r[i:i + 3] == bytes(EAGER) and r[i - 3:i] != bytes(EAGER))
assert 15 <= boxes <= 25, f"{boxes} kernel boxes in a bare lane"

# Narrower, and with empty traces: still a PNG.
write(os.path.join(tmp, "empty.txt"), [])
w, h, _ = run(os.path.join(tmp, "empty.txt"), os.path.join(tmp, "empty.txt"), out, "--width", "640")
assert read_png(out)[:2] == (640, h) == (w, h)
print("timeline: ok")

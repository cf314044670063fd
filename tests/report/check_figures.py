#!/usr/bin/env python3
"""Checks what `tach report --png --pptx` wrote, from its own output lines, with the standard
library only: every PNG decodes (chunk CRCs, the image data inflates to exactly its rows) at the
size the command stated and is not blank; the deck is a package whose every relationship points
at a part that exists, with one picture per figure slide.

Usage: check_figures.py REPORT_STDOUT_FILE --expect NAME [--expect NAME ...] [--slides N]
"""
import argparse
import re
import struct
import sys
import zipfile
import zlib
import xml.etree.ElementTree as ET
from pathlib import PurePosixPath

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NS_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
NS_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
NS_CT = "{http://schemas.openxmlformats.org/package/2006/content-types}"


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def check_png(path, width, height):
    data = open(path, "rb").read()
    if not data.startswith(PNG_SIGNATURE):
        fail(f"{path}: not a PNG (signature)")
    at, idat, header = len(PNG_SIGNATURE), b"", None
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        if zlib.crc32(kind + body) != crc:
            fail(f"{path}: chunk {kind!r} has a bad CRC")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    if header is None:
        fail(f"{path}: no IHDR chunk")
    w, h, depth, colour = header[:4]
    if (w, h) != (width, height):
        fail(f"{path}: {w}x{h} px, but tach said {width}x{height}")
    channels = {6: 4, 2: 3}.get(colour)
    if depth != 8 or channels is None:
        fail(f"{path}: bit depth {depth}, colour type {colour}: expected 8-bit RGB or RGBA")
    pixels = zlib.decompress(idat)
    stride = 1 + w * channels
    if len(pixels) != h * stride:
        fail(f"{path}: the image data holds {len(pixels)} bytes, {h} rows need {h * stride}")
    # Not blank: some byte of some row differs from white (filter bytes aside, white rows are 0xff
    # or, filtered by 'up', zeros; a chart has dark text, so plenty of other values occur).
    values = set(pixels[::97])
    if len(values) < 8:
        fail(f"{path}: looks blank ({len(values)} distinct byte values sampled)")


def check_deck(path, figures):
    with zipfile.ZipFile(path) as z:
        if z.testzip() is not None:
            fail(f"{path}: a corrupt member")
        names = set(z.namelist())
        types = ET.fromstring(z.read("[Content_Types].xml"))
        overrides = {o.get("PartName").lstrip("/") for o in types.iter(NS_CT + "Override")}
        defaults = {d.get("Extension") for d in types.iter(NS_CT + "Default")}
        for name in names:
            if name not in overrides and name.rsplit(".", 1)[-1] not in defaults:
                fail(f"{path}: {name} has no content type")
        for name in names:
            if not name.endswith(".rels"):
                continue
            base = PurePosixPath(name).parent.parent
            for rel in ET.fromstring(z.read(name)).iter(NS_REL + "Relationship"):
                target = f"{base}/{rel.get('Target')}"
                parts = []
                for piece in target.split("/"):
                    if piece == "..":
                        parts.pop()
                    elif piece not in ("", "."):
                        parts.append(piece)
                if "/".join(parts) not in names:
                    fail(f"{path}: {name} points at {rel.get('Target')}, which is not in the package")
        presentation = ET.fromstring(z.read("ppt/presentation.xml"))
        slides = len(list(presentation.iter(NS_P + "sldId")))
        pictures = [len(list(ET.fromstring(z.read(f"ppt/slides/slide{i}.xml")).iter(NS_P + "pic")))
                    for i in range(1, slides + 1)]
    if pictures[0] != 0 or pictures[1:1 + figures] != [1] * figures or any(pictures[1 + figures:]):
        fail(f"{path}: pictures per slide {pictures}: expected a title, {figures} figures, then findings")
    return slides


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stdout")
    ap.add_argument("--expect", action="append", default=[], help="a figure name that must be written")
    args = ap.parse_args()
    text = open(args.stdout).read()
    pngs = re.findall(r"^wrote (\S+\.png) \((\d+)x(\d+) px\)$", text, re.M)
    if not pngs:
        fail("tach report wrote no PNG")
    written = {PurePosixPath(p).stem for p, _, _ in pngs}
    for name in args.expect:
        if name not in written:
            fail(f"no {name}.png among {sorted(written)}")
    for path, w, h in pngs:
        check_png(path, int(w), int(h))
    print(f"{len(pngs)} PNGs valid at their stated sizes: {', '.join(sorted(written))}")
    deck = re.search(r"^wrote (\S+\.pptx) \((\d+) slides", text, re.M)
    if deck:
        slides = check_deck(deck.group(1), len(pngs))
        if slides != int(deck.group(2)):
            fail(f"{deck.group(1)}: {slides} slides, but tach said {deck.group(2)}")
        print(f"{deck.group(1)}: {slides} slides, every relationship resolved, one picture per figure slide")


if __name__ == "__main__":
    main()

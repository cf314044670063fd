#!/usr/bin/env python3
"""Opens tach's slide deck with python-pptx (the development virtualenv) and counts its slides and
pictures; each picture must be the PNG file of its figure, byte for byte.

Usage: check_deck_pptx.py DECK SLIDES PNG [PNG ...]   (the PNGs in figure order)
"""
import sys

from pptx import Presentation
from pptx.shapes.picture import Picture

deck, slides, pngs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
p = Presentation(deck)
if len(p.slides) != slides:
    sys.exit(f"FAIL: python-pptx reads {len(p.slides)} slides, tach said {slides}")
if (p.slide_width, p.slide_height) != (12192000, 6858000):
    sys.exit(f"FAIL: slide size {p.slide_width}x{p.slide_height} EMU, expected 16:9 (12192000x6858000)")
pictures = [[s for s in slide.shapes if isinstance(s, Picture)] for slide in p.slides]
figure_pictures = [pics[0] for pics in pictures if pics]
if len(figure_pictures) != len(pngs) or any(len(pics) > 1 for pics in pictures):
    sys.exit(f"FAIL: pictures per slide {[len(x) for x in pictures]}, expected one on each of {len(pngs)} figure slides")
for pic, png in zip(figure_pictures, pngs):
    if pic.image.blob != open(png, "rb").read():
        sys.exit(f"FAIL: the picture on the slide of {png} is not that file")
    if pic.left < 0 or pic.top < 0 or pic.left + pic.width > p.slide_width or pic.top + pic.height > p.slide_height:
        sys.exit(f"FAIL: the picture of {png} reaches outside its slide")
title = [s.text_frame.text for s in p.slides[0].shapes if s.has_text_frame]
if not title or not title[0].startswith("tach report: "):
    sys.exit(f"FAIL: the title slide says {title!r}")
print(f"python-pptx: {len(p.slides)} slides, {len(figure_pictures)} pictures, each its figure's PNG, inside its slide")

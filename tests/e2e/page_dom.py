#!/usr/bin/env python3
"""Checks a run page's DOM as headless chromium dumped it (tests/e2e/observe.sh).

Usage: page_dom.py DOM_FILE NAME MIN_UPDATES CHART[=MIN_POINTS]...
The page (src/obs/page.html) writes what it did on <body> (data-points, data-updates,
data-errors, data-first-draw-ms) and each chart's point count on its canvas (data-points), and
on the canvas of a chart with nothing to draw the words it shows instead (data-none).
Fails when the page counted an error (a script error, a rejected promise, console.error), when
it updated fewer than MIN_UPDATES times, or when a named chart holds fewer points than its
MIN_POINTS (1 unless given)."""
import re
import sys

dom_file, name, min_updates = sys.argv[1], sys.argv[2], int(sys.argv[3])
charts = {c.split("=")[0]: int(c.split("=")[1]) if "=" in c else 1 for c in sys.argv[4:]}
dom = open(dom_file).read()
body = re.search(r"<body([^>]*)>", dom).group(1)


def attr(key, text=body):
    found = re.search(key + r'="(\d+)"', text)
    return int(found.group(1)) if found else -1


def canvas(cid):
    return attr("data-points", re.search(r'<canvas id="%s"([^>]*)>' % cid, dom).group(1))


counts = ", ".join(f"{c} {canvas(c)}" for c in charts)
# A chart with nothing to draw says so instead (data-none on its canvas, the text where it was).
said = re.findall(r'<canvas id="([^"]+)"[^>]*data-none="([^"]+)"', dom)
if said:
    counts += "; said instead of a chart: " + "; ".join(f"{c} '{t}'" for c, t in said)
print(f"{name}: first charts drawn {attr('data-first-draw-ms')} ms after navigation; "
      f"{attr('data-points')} points, {attr('data-updates')} updates, "
      f"{attr('data-errors')} errors; {counts}")
errors = re.search(r'<div id="errors">(.*?)</div>', dom, re.S)
assert attr("data-errors") == 0, errors.group(1) if errors else "errors"
assert attr("data-updates") >= min_updates, f"{name}: updated {attr('data-updates')} times"
for c, least in charts.items():
    assert canvas(c) >= least, f"{name}: chart {c} holds {canvas(c)} points, fewer than {least}"

#!/usr/bin/env python3
"""Reads back what a run page's charts hold, from Chart.js itself, in headless chromium.

Usage: chart_values.py URL OUT_JSON MIN_UPDATES [--epochs N] [CHROMIUM_ARG...]
Opens URL (the live dashboard or a report.html) in headless chromium driven through its DevTools
protocol over a pipe (--remote-debugging-pipe: no port, no websocket), waits until the page has
drawn MIN_UPDATES times (its own counter, <body data-updates>; or once, if the job it watches
ended first and the page stopped updating) and, with --epochs N, until its epochs chart holds N
epochs at least (a slow build, under sanitizers, may draw twice before the first epoch ends),
and then evaluates, in the page,
for every canvas: Chart.getChart(canvas).data (labels, each dataset's label and data), per
dataset the value each drawn element stands for (getDatasetMeta(i).data, each element's pixel
position read back through its scales; a bar's base too, which Chart.js puts on a whole pixel:
y_per_pixel says how much a pixel is), and the text the page shows instead of a chart with
nothing to draw (data-none; none_shown: that text shows, the plot hidden); and the header's
facts as shown (<span data-fact=NAME>NAME <b>VALUE</b>). Writes {"errors",
"updates", "facts": {name: text}, "charts": {id: ...}} to OUT_JSON. Fails when the page counted
an error, or did not draw MIN_UPDATES times in 90 s.
"""
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

READ_BACK = r"""(() => {
  const charts = {};
  for (const canvas of document.querySelectorAll("canvas")) {
    const ch = Chart.getChart(canvas);
    if (!ch) { charts[canvas.id] = null; continue; }
    const bar = ch.config.type === "bar";
    charts[canvas.id] = {
      type: ch.config.type,
      none: canvas.dataset.none || "",
      none_shown: Boolean(canvas.dataset.none) && canvas.offsetParent === null &&
        [...canvas.closest(".card").querySelectorAll(".none")].some(
          p => p.offsetParent !== null && p.textContent === canvas.dataset.none),
      labels: ch.data.labels,
      datasets: ch.data.datasets.map((ds, i) => {
        const meta = ch.getDatasetMeta(i);
        const xs = ch.scales[meta.xAxisID], ys = ch.scales[meta.yAxisID];
        return {
          label: ds.label,
          data: ds.data,
          drawn: meta.data.map(el => bar
            ? { index: Math.round(xs.getValueForPixel(el.x)), y: ys.getValueForPixel(el.y),
                base: ys.getValueForPixel(el.base) }
            : { x: xs.getValueForPixel(el.x), y: ys.getValueForPixel(el.y) }),
          y_range: [ys.min, ys.max],
          y_per_pixel: Math.abs((ys.max - ys.min) / (ys.bottom - ys.top)),
        };
      }),
    };
  }
  const facts = {};
  for (const f of document.querySelectorAll("#facts [data-fact]")) {
    facts[f.dataset.fact] = f.querySelector("b").textContent;
  }
  return JSON.stringify({ errors: Number(document.body.dataset.errors),
                          error_text: (document.getElementById("errors") || {}).textContent || "",
                          updates: Number(document.body.dataset.updates), facts, charts });
})()"""


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe: JSON messages ended by NUL,
    chromium reading fd 3 and writing fd 4."""

    def __init__(self, chromium, args, log):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds():  # fd 3 and 4 in the child, inheritable (os.pipe's are close-on-exec)
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen([chromium, "--remote-debugging-pipe"] + args,
                                     preexec_fn=fds, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._id = 0

    def call(self, method, params=None, session=None, timeout=60):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
            left = end - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise TimeoutError(f"chromium did not answer {method} in {timeout} s")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe (see its log)")
            self._buffer += chunk

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main():
    url, out, min_updates = sys.argv[1], sys.argv[2], int(sys.argv[3])
    extra = sys.argv[4:]
    min_epochs = 0
    if extra[:1] == ["--epochs"]:
        min_epochs, extra = int(extra[1]), extra[2:]
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="acan-chart-values-")
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", f"--user-data-dir={profile}"] + extra + ["about:blank"]
    with open(out + ".log", "w") as log:
        browser = DevTools(chromium, args, log)
        try:
            target = browser.call("Target.createTarget", {"url": url})["targetId"]
            session = browser.call("Target.attachToTarget",
                                   {"targetId": target, "flatten": True})["sessionId"]
            # Drawn MIN_UPDATES times, or at least once before the job ended and took its
            # server with it (the page says it is "not updating"): what it drew stays.
            ready = ("typeof Chart !== 'undefined' && document.body && "
                     f"(Number(document.body.dataset.updates) >= {min_updates} || "
                     "(Number(document.body.dataset.updates) >= 1 && "
                     "document.getElementById('facts').textContent.includes('not updating')))")
            if min_epochs:
                epochs = ("(Chart.getChart(document.getElementById('c-epochs')) || "
                          "{data: {datasets: [{data: []}]}}).data.datasets[0].data.length")
                ready = f"({ready}) && {epochs} >= {min_epochs}"
            end = time.monotonic() + 90
            while True:
                got = browser.call("Runtime.evaluate", {"expression": ready,
                                                        "returnByValue": True}, session)
                if got.get("result", {}).get("value") is True:
                    break
                if time.monotonic() > end:
                    sys.exit(f"FAIL: {url} did not draw {min_updates} times"
                             f" ({min_epochs} epochs at least) in 90 s")
                time.sleep(0.1)
            got = browser.call("Runtime.evaluate", {"expression": READ_BACK,
                                                    "returnByValue": True}, session)
            if "exceptionDetails" in got:
                sys.exit(f"FAIL: reading the charts of {url}: {got['exceptionDetails']}")
            values = json.loads(got["result"]["value"])
        finally:
            browser.close()
            shutil.rmtree(profile, ignore_errors=True)
    with open(out, "w") as f:
        json.dump(values, f)
    if values["errors"] != 0:
        sys.exit(f"FAIL: {url} counted {values['errors']} errors: {values['error_text']}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An `mlbert report` page as a reader sees it: rendered by headless Chromium, driven over the
DevTools protocol on a pipe (--remote-debugging-pipe: no port, no network, stdlib only).

Fails (exit 1, one FAIL line per finding) when:
  - the browser logs anything: a console message, an uncaught exception, or a log entry of level
    warning or error (a Content-Security-Policy violation, i.e. a load or a script the page must
    not have, is such an error);
  - the DOM holds active content (script, iframe, object, embed, img, link) or an on* handler
    attribute: log text must never become markup;
  - the page is blank, or it or a card's content overflows sideways, or a table is clipped
    (wider than its card, or a cell's content wider than the cell) at 1,280 px;
  - a plot is missing, tiny, without marks, or painted no coloured pixels in the screenshot;
  - a system lacks one of the report's sections (a plot, or a note saying why there is none).
Exit 77 (skipped) when Chromium is not installed.

usage: report_browser.py CHROMIUM PAGE.html --screenshot OUT.png [--clip-height H]
                         [--require SYSTEM:KIND,KIND ...] [--sections N]
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

WIDTH = 1280
# Every system's report has each of these, as an <svg data-plot> or a <p class="missing">.
SECTIONS = ["accuracy", "time-to-train", "rcp", "timeline", "throughput"]
MIN_PLOT_W, MIN_PLOT_H = 150, 80
MIN_COLOURED_PIXELS = 30  # per plot: saturated pixels (run colours, rules) in the screenshot
MIN_INK_FRACTION = 0.03    # of the whole page: pixels other than the page and card backgrounds

PAGE_CHECK_JS = r"""
(() => {
  const out = {plots: [], missing: [], active: [], handlers: []};
  for (const el of document.querySelectorAll('script, iframe, object, embed, img, link, frame'))
    out.active.push(el.outerHTML.slice(0, 120));
  for (const el of document.querySelectorAll('*'))
    for (const a of el.attributes)
      if (a.name.toLowerCase().startsWith('on')) out.handlers.push(el.tagName + ' ' + a.name);
  const card = el => el.closest('[data-system]');
  for (const svg of document.querySelectorAll('svg.plot')) {
    const r = svg.getBoundingClientRect();
    const c = card(svg);
    out.plots.push({kind: svg.dataset.plot, id: svg.id, system: c ? c.dataset.system : null,
                    x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
                    marks: svg.querySelectorAll('g[clip-path] > *').length});
  }
  for (const p of document.querySelectorAll('p.missing[data-plot]')) {
    const c = card(p);
    out.missing.push({kind: p.dataset.plot, system: c ? c.dataset.system : null,
                      text: p.textContent});
  }
  out.overflowing = [];
  for (const c of document.querySelectorAll('.card'))
    if (c.scrollWidth > c.clientWidth + 1)
      out.overflowing.push((c.querySelector('h3') || c).textContent.slice(0, 80) + ': ' +
                           c.scrollWidth + ' > ' + c.clientWidth + ' px');
  // A table is clipped when it is wider than the card (or page) it sits in, or when a cell's
  // content is wider than the cell.
  out.clipped = [];
  for (const t of document.querySelectorAll('table')) {
    const box = (t.closest('.card') || document.body).getBoundingClientRect();
    const r = t.getBoundingClientRect();
    const name = t.className || 'table';
    if (r.right > box.right + 1 || r.left < box.left - 1)
      out.clipped.push(`${name}: ${Math.round(r.width)} px wide in a box of ${Math.round(box.width)} px`);
    for (const c of t.querySelectorAll('th, td'))
      if (c.scrollWidth > c.clientWidth + 1)
        out.clipped.push(`${name} cell "${c.textContent.slice(0, 40)}": ${c.scrollWidth} > ${c.clientWidth} px`);
  }
  out.tables = document.querySelectorAll('table').length;
  out.text_length = document.body.innerText.length;
  out.scroll_width = document.documentElement.scrollWidth;
  out.inner_width = innerWidth;
  out.height = document.documentElement.scrollHeight;
  return JSON.stringify(out);
})()
"""

# Runs in about:blank on the screenshot: the share of ink on the page and, per plot rectangle,
# the number of saturated pixels (max - min channel > 60).
PIXEL_CHECK_JS = r"""
(async () => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + PNG;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width; c.height = img.height;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  const background = [[0xf5, 0xf7, 0xf9], [0xff, 0xff, 0xff]];
  let ink = 0;
  for (let i = 0; i < d.length; i += 4) {
    let plain = false;
    for (const b of background)
      if (Math.abs(d[i] - b[0]) + Math.abs(d[i + 1] - b[1]) + Math.abs(d[i + 2] - b[2]) < 12) plain = true;
    if (!plain) ink++;
  }
  const coloured = RECTS.map(r => {
    let n = 0;
    const x0 = Math.max(0, Math.floor(r.x)), y0 = Math.max(0, Math.floor(r.y));
    const x1 = Math.min(c.width, Math.ceil(r.x + r.w)), y1 = Math.min(c.height, Math.ceil(r.y + r.h));
    for (let y = y0; y < y1; y++)
      for (let x = x0; x < x1; x++) {
        const i = 4 * (y * c.width + x);
        const hi = Math.max(d[i], d[i + 1], d[i + 2]), lo = Math.min(d[i], d[i + 1], d[i + 2]);
        if (hi - lo > 60) n++;
      }
    return n;
  });
  return JSON.stringify({width: c.width, height: c.height, ink: ink / (c.width * c.height), coloured});
})()
"""


class Browser:
    """Headless Chromium spoken to over --remote-debugging-pipe (fd 3 in, fd 4 out, NUL framed)."""

    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="mlbert-report-browser-")
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()

        def child_fds():
            a, b = os.dup(cmd_r), os.dup(out_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + self.profile,
             "about:blank"],
            pass_fds=(3, 4), preexec_fn=child_fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(cmd_r)
        os.close(out_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def _read_message(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.out_r, 1 << 20)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:]
                raise RuntimeError("Chromium closed the DevTools pipe:\n" + err)
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self.cmd_w, data):]
        while True:
            m = self._read_message()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method):
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read_message()
            if m.get("method") == method:
                return m
            self.events.append(m)

    def open_tab(self):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False})

    def navigate(self, url):
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError("evaluate failed: " + json.dumps(result["exceptionDetails"])[:500])
        return json.loads(result["result"]["value"])

    def complaints(self):
        """What the page made the browser say (console, exceptions, warnings and errors)."""
        found = []
        for m in self.events:
            method, p = m.get("method"), m.get("params", {})
            if method == "Runtime.consoleAPICalled":
                found.append("console." + p.get("type", "?") + ": " +
                             " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                found.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
            elif method == "Log.entryAdded" and p["entry"].get("level") in ("warning", "error"):
                e = p["entry"]
                found.append(f"log {e.get('level')} ({e.get('source')}): {e.get('text')}")
        return found

    def close(self):
        try:
            self.call("Browser.close", session=False)
        except RuntimeError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("chromium")
    ap.add_argument("page")
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--clip-height", type=int, default=0, help="keep only the top of the page")
    ap.add_argument("--require", action="append", default=[],
                    help="SYSTEM:KIND,KIND plots that must be drawn for system SYSTEM (0-based)")
    ap.add_argument("--systems", type=int, required=True, help="systems the page shows")
    args = ap.parse_args()
    chromium = shutil.which(args.chromium)
    if not chromium:
        print(f"SKIPPED: {args.chromium} not found (Debian package chromium; scripts/deps.sh)")
        return 77

    failures = []
    browser = Browser(chromium)
    try:
        browser.open_tab()
        browser.navigate("file://" + os.path.abspath(args.page))
        page = browser.evaluate(PAGE_CHECK_JS)
        height = page["height"] if args.clip_height <= 0 else min(page["height"], args.clip_height)
        shot = browser.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1}})["data"]
        failures += browser.complaints()
        with open(args.screenshot, "wb") as f:
            f.write(base64.b64decode(shot))
        # The pixels, judged by the browser's own PNG decoder in a blank tab.
        browser.navigate("about:blank")
        browser.events.clear()
        rects = [p for p in page["plots"] if p["y"] + p["h"] <= height]
        pixels = browser.evaluate(PIXEL_CHECK_JS.replace("PNG", json.dumps(shot))
                                  .replace("RECTS", json.dumps(rects)))
    finally:
        browser.close()

    failures += [f"active content in the DOM: {a}" for a in page["active"]]
    failures += [f"event handler attribute: {h}" for h in page["handlers"]]
    if page["text_length"] < 200:
        failures.append(f"page is nearly empty: {page['text_length']} characters of text")
    failures += [f"card content overflows its card: {c}" for c in page["overflowing"]]
    failures += [f"table clipped at {WIDTH} px: {c}" for c in page["clipped"]]
    if page["scroll_width"] > page["inner_width"] + 1:
        failures.append(f"page overflows sideways: {page['scroll_width']} > {page['inner_width']} px")
    if pixels["ink"] < MIN_INK_FRACTION:
        failures.append(f"screenshot is blank: {pixels['ink']:.1%} of its pixels are not background")
    for plot in page["plots"]:
        where = f"system {plot['system']} plot {plot['kind']} ({plot['id']})"
        if plot["w"] < MIN_PLOT_W or plot["h"] < MIN_PLOT_H:
            failures.append(f"{where}: rendered {plot['w']:.0f}x{plot['h']:.0f} px")
        if plot["marks"] < 1:
            failures.append(f"{where}: no marks")
    for plot, coloured in zip(rects, pixels["coloured"]):
        if coloured < MIN_COLOURED_PIXELS:
            failures.append(f"system {plot['system']} plot {plot['kind']}: only {coloured} "
                            "coloured pixels in the screenshot")

    drawn = {}
    for p in page["plots"]:
        drawn.setdefault(p["system"], set()).add(p["kind"])
    explained = {}
    for m in page["missing"]:
        explained.setdefault(m["system"], set()).add(m["kind"])
        if len(m["text"].strip()) < 10:
            failures.append(f"system {m['system']}: {m['kind']} missing without a reason")
    for s in map(str, range(args.systems)):
        for kind in SECTIONS:
            if kind not in drawn.get(s, set()) and kind not in explained.get(s, set()):
                failures.append(f"system {s}: no {kind} section (neither a plot nor a reason)")
    for spec in args.require:
        system, kinds = spec.split(":", 1)
        for kind in kinds.split(","):
            if kind not in drawn.get(system, set()):
                failures.append(f"system {system}: plot {kind} required but not drawn")

    for f in failures:
        print("FAIL:", f)
    print(f"report_browser: {len(page['plots'])} plots and {page['tables']} tables for "
          f"{args.systems} system(s), "
          f"{len(page['missing'])} explained absences, page {WIDTH}x{page['height']} px, "
          f"{pixels['ink']:.0%} ink; screenshot {pixels['width']}x{pixels['height']} "
          f"-> {args.screenshot}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

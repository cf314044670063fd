#!/usr/bin/env python3
"""Opens tach's HTML pages in headless Chromium (Selenium with Debian's chromium-driver) and checks
what a reader sees: no console errors, every chart drawn with the series it should have, and the
tables holding the run's numbers. Takes a screenshot of each page beside it (PAGE.png).

    check_report.py PAGE.html [--expect KIND=N,N,...]... [--contains TEXT]... [--max-mb 2] [--max-load-s 2]

--expect line-chart=2,2,0,2,2,2: the page's line charts, in order, and the <g class="series"> in each.
Exit 77 (ctest's skip) when Selenium or Chromium cannot be had, saying why.
"""
import argparse
import os
import shutil
import socket
import sys
import time

SKIP = 77


def localhost_resolves():
    try:
        socket.getaddrinfo("localhost", None)
        return True
    except OSError:
        return False


def start_chromium_on_loopback(flags):
    """Where "localhost" does not resolve (a minimal root without /etc/hosts), chromedriver cannot
    reach a browser it starts itself (it asks for ws://localhost:PORT); start Chromium here with a
    DevTools port and let chromedriver attach to 127.0.0.1:PORT. Returns (process, port)."""
    import subprocess
    import tempfile
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    profile = tempfile.mkdtemp(prefix="tach-chromium-")
    proc = subprocess.Popen([browser, *flags, f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1",
                             f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("Chromium did not open its DevTools port")


def loopback_by_address():
    """Selenium talks to chromedriver through the name "localhost"; a minimal root (a fresh container
    or chroot) may have no /etc/hosts to resolve it, so use the loopback address instead."""
    if localhost_resolves():
        return
    from selenium.webdriver.common import utils
    join, connectable = utils.join_host_port, utils.is_connectable
    utils.join_host_port = lambda host, port: join("127.0.0.1" if host == "localhost" else host, port)
    utils.is_connectable = lambda port, host="127.0.0.1": connectable(port, "127.0.0.1" if host == "localhost" else host)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--contains", action="append", default=[])
    ap.add_argument("--max-mb", type=float, default=0)
    ap.add_argument("--max-load-s", type=float, default=0)
    a = ap.parse_args()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        print("SKIP: python3-selenium is not installed (scripts/setup.sh installs it)")
        return SKIP
    loopback_by_address()
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not os.path.exists(driver_path) or not (shutil.which("chromium") or shutil.which("chromium-browser")):
        print("SKIP: chromium and chromium-driver are not installed (scripts/setup.sh installs them)")
        return SKIP
    size_mb = os.path.getsize(a.page) / 1e6
    if a.max_mb and size_mb > a.max_mb:
        print(f"FAIL: {a.page} is {size_mb:.2f} MB, over {a.max_mb} MB")
        return 1
    opts = webdriver.ChromeOptions()
    flags = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1250,1600")
    for flag in flags:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser_proc = None
    try:
        if not localhost_resolves():
            browser_proc, port = start_chromium_on_loopback(flags)
            opts = webdriver.ChromeOptions()
            opts.debugger_address = f"127.0.0.1:{port}"
            opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        d = webdriver.Chrome(service=Service(driver_path), options=opts)
    except Exception as e:  # a browser that will not start in this sandbox
        if browser_proc:
            browser_proc.kill()
        print(" ".join(f"SKIP: headless Chromium would not start: {e}".split())[:300])
        return SKIP
    failures = []
    try:
        t0 = time.perf_counter()
        d.get("file://" + os.path.abspath(a.page))
        loaded = time.perf_counter() - t0
        nav = d.execute_script(
            "const n = performance.getEntriesByType('navigation')[0]; return n ? n.loadEventEnd : null;")
        load_ms = nav if nav else loaded * 1e3
        errors = [e for e in d.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
        for e in errors:
            failures.append(f"console error: {e.get('message')}")
        for spec in a.expect:
            kind, counts = spec.split("=")
            want = [int(x) for x in counts.split(",")] if counts else []
            got = d.execute_script(
                "return Array.from(document.querySelectorAll(\"svg.chart.\" + arguments[0]))"
                ".map(s => s.querySelectorAll('g.series').length);", kind)
            if got != want:
                failures.append(f"{kind}: series per chart {got}, expected {want}")
            drawn = d.execute_script(
                "return Array.from(document.querySelectorAll(\"svg.chart.\" + arguments[0]))"
                ".map(s => { const b = s.getBoundingClientRect(); return b.width > 0 && b.height > 0; });", kind)
            if not all(drawn):
                failures.append(f"{kind}: a chart has no size on the page")
        text = d.execute_script("return document.body.innerText;")
        for t in a.contains:
            if t not in text:
                failures.append(f"the page does not show {t!r}")
        if a.max_load_s and load_ms / 1e3 > a.max_load_s:
            failures.append(f"rendered in {load_ms / 1e3:.2f} s, over {a.max_load_s} s")
        shot = os.path.splitext(a.page)[0] + ".png"
        d.save_screenshot(shot)
        print(f"{a.page}: {size_mb:.3f} MB, loaded in {load_ms:.0f} ms (navigation timing), "
              f"{len(errors)} console errors; screenshot {shot}")
    finally:
        d.quit()
        if browser_proc:
            browser_proc.kill()
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

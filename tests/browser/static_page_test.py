"""`lockstep view --static` in a real browser: the folder it writes, served by a plain static web
server (Python's), verifies a native recording inside the page with lockstep's WebAssembly engine
and says what `lockstep replay` says, word for word; it draws the tick and hash that `lockstep run`
computes in its own process, seeks from keyframes, refuses a bad file with the command line's
error, opens a file from disk through the file picker, asks for no favicon, and fits a
1,280-pixel-wide window.

usage: static_page_test.py LOCKSTEP NUDGED_WORLD WORK_DIR [--figures]
  NUDGED_WORLD: the test build that simulates differently (tests/tools/nudged_world_main.cpp), whose
  recording `lockstep replay` finds a divergence in
  --figures: also time the page verifying recordings of 1,000 and 10,000 bodies (the figures of
  docs/WEBASSEMBLY.md)
"""

import functools
import json
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from checks import check, exit_code  # noqa: E402




def run(lockstep, *args, cwd=None, codes=(0,)):
    result = subprocess.run([lockstep, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    if result.returncode not in codes:
        raise RuntimeError(f"lockstep {' '.join(args)}: exit {result.returncode}: {result.stderr}")
    return result


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def run_hash(lockstep, ticks):
    """The hash `lockstep run` prints after `ticks` ticks of the test's session, in its own process."""
    out = last_line(run(lockstep, "run", "--seed", "3", "--ticks", str(ticks)).stdout)
    match = re.fullmatch(r"tick (\d+) hash ([0-9a-f]{16})", out)
    assert match and int(match.group(1)) == ticks, out
    return match.group(2)


class StaticServer:
    """Any static web server will do: this one is Python's, and it keeps the paths asked for."""

    def __init__(self, folder):
        self.asked = []
        asked = self.asked

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                asked.append(self.path.split("?")[0])
                super().do_GET()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=folder))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()


def verdict(browser, what, timeout=300):
    browser.wait_for("document.body.dataset.verdictCode !== undefined", timeout=timeout, what=what)
    return browser.evaluate("""({code: Number(document.body.dataset.verdictCode), last: document.body.dataset.verdict,
                                 text: document.getElementById('verdict').textContent,
                                 seconds: Number(document.body.dataset.verifySeconds)})""")


def expected(lockstep, folder, name):
    """What `lockstep replay NAME` prints, run in the folder so that it names the file as the page does."""
    result = run(lockstep, "replay", name, cwd=folder, codes=(0, 1, 2, 4))
    return result.returncode, result.stdout, result.stderr


def check_same_as_replay(page, lockstep, folder, name):
    code, out, err = expected(lockstep, folder, name)
    last = last_line(out) if out.strip() else last_line(err)
    check(page["code"] == code, f"{name}: the page's exit code is replay's {code} ({page['code']})")
    check(page["last"] == last, f"{name}: the page's verdict is replay's '{last}' ('{page['last']}')")
    lines = [line for line in (err + out).splitlines() if "\r" not in line]
    check(page["text"].splitlines() == lines, f"{name}: the page shows every line replay prints ({len(lines)})")


def figures(lockstep, work, folder, url, browser):
    for bodies, ticks in ((1000, 10000), (10000, 600)):
        name = f"arena-{bodies}.lsr"
        run(lockstep, "run", "--bodies", str(bodies), "--ticks", str(ticks), "--seed", "3", "--record", os.path.join(folder, name))
        started = time.monotonic()
        run(lockstep, "replay", name, cwd=folder)
        native_s = time.monotonic() - started
        browser.navigate(f"{url}/index.html?replay={name}&paused=1")
        page = verdict(browser, f"the page to verify {name}", timeout=900)
        check(page["code"] == 0, f"{name}: verified in the page ({page['last']})")
        print(f"     figure: {bodies} bodies, {ticks} ticks: the page verifies in {page['seconds']:.2f} s "
              f"({ticks / page['seconds']:.0f} ticks/s); native replay {native_s:.2f} s "
              f"({ticks / native_s:.0f} ticks/s); page/native {native_s / page['seconds']:.2f}x")


def main():
    lockstep, nudged, work = (os.path.abspath(a) for a in sys.argv[1:4])
    os.makedirs(work, exist_ok=True)
    folder = os.path.join(work, "static")
    shutil.rmtree(folder, ignore_errors=True)

    wrote = run(lockstep, "view", "--static", folder).stdout
    check(re.match(r"view: wrote \d+ files \([0-9,]+ bytes\) to ", wrote) is not None, f"view --static says what it wrote ({wrote.strip()})")
    again = run(lockstep, "view", "--static", folder, codes=(2,))
    check(last_line(again.stderr).startswith("error: ") and "not empty" in again.stderr,
          f"view --static refuses a folder that is not empty ({last_line(again.stderr)})")
    check(not any(name.endswith((".cpp", ".hpp")) for name in os.listdir(folder)), "the folder holds no server code")

    replay = os.path.join(folder, "arena.lsr")
    run(lockstep, "run", "--ticks", "1200", "--seed", "3", "--record", replay, "--keyframe-every", "300")
    expected_600, expected_1100 = run_hash(lockstep, 600), run_hash(lockstep, 1100)
    with open(replay, "rb") as f:
        data = f.read()
    with open(os.path.join(folder, "truncated.lsr"), "wb") as f:  # a recording cut short mid-chunk
        f.write(data[:len(data) * 2 // 3])
    with open(os.path.join(folder, "garbage.lsr"), "wb") as f:
        f.write(b"LSRP" + bytes(range(256)) * 4)
    # A recording by a build that simulates differently from tick 120 on: replay names the divergence.
    subprocess.run([nudged, "run", "--bodies", "60", "--seed", "4", "--ticks", "240", "--record",
                    os.path.join(folder, "diverges.lsr")], check=True, capture_output=True, timeout=600,
                   env={**os.environ, "LOCKSTEP_TEST_NUDGE": "@120:3:contacts"})

    with StaticServer(folder) as server, Browser() as browser:
        browser.navigate(f"{server.url}/index.html?replay=arena.lsr&tick=600&paused=1")
        page = verdict(browser, "the page to verify arena.lsr")
        check_same_as_replay(page, lockstep, folder, "arena.lsr")
        check(page["last"].startswith("ok 1200 ticks verified, 1200 hashes checked, final hash "),
              f"the page verified all 1,200 ticks ({page['last']})")
        print(f"     the page verified 1,200 ticks of the 1,000-body arena in {page['seconds']:.2f} s")
        browser.wait_for("document.body.dataset.drawnTick === '600'", timeout=120, what="the page to draw tick 600")
        hash_600 = browser.evaluate("document.getElementById('hash').textContent")
        check(hash_600 == expected_600, f"the page draws tick 600 with run's hash {expected_600} ({hash_600})")
        browser.evaluate("lockstepView.seek(1100)")
        browser.wait_for("document.body.dataset.drawnTick === '1100'", timeout=60, what="the seek to 1100")
        hash_1100 = browser.evaluate("document.getElementById('hash').textContent")
        check(hash_1100 == expected_1100, f"after a seek the page shows tick 1100 with run's hash ({hash_1100})")
        layout = browser.evaluate("""({scroll: document.documentElement.scrollWidth, width: window.innerWidth,
                                       aside: document.querySelector('aside').getBoundingClientRect().right})""")
        check(layout["scroll"] <= layout["width"] and layout["aside"] <= layout["width"],
              f"at 1,280 pixels wide the side panel fits, with no horizontal scrollbar ({layout})")

        for name in ("truncated.lsr", "garbage.lsr", "diverges.lsr"):
            browser.navigate(f"{server.url}/index.html?replay={name}&paused=1")
            check_same_as_replay(verdict(browser, f"the page's verdict on {name}"), lockstep, folder, name)
        shown = browser.wait_for("!document.getElementById('divergence').hidden && "
                                 "document.getElementById('divergence-tick').textContent", what="the divergence panel")
        check(shown == "120", f"the page marks the first divergence, tick 120, on its timeline ({shown})")
        browser.navigate(f"{server.url}/index.html?replay=//example.com/x.lsr")
        state = browser.wait_for("document.body.dataset.state === 'error' && document.getElementById('status').textContent",
                                 what="the page to refuse another site's replay")
        check("this page's own site only" in state, f"?replay= from another site is refused ({state})")
        check("/favicon.ico" not in server.asked, f"the page asks for no favicon ({sorted(set(server.asked))})")
        if "--figures" in sys.argv:
            figures(lockstep, work, folder, server.url, browser)

    # From disk, with no server at all: the file picker opens the recording.
    with Browser() as browser:
        browser.navigate(f"file://{folder}/index.html?paused=1")
        browser.wait_for("document.body.dataset.state === 'waiting'", what="the page from disk to ask for a replay")
        node = browser.call("Runtime.evaluate", {"expression": "document.getElementById('open-file')"})["result"]
        browser.call("DOM.enable")
        browser.call("DOM.setFileInputFiles", {"files": [replay], "objectId": node["objectId"]})  # fires 'change'
        page = verdict(browser, "the page from disk to verify the chosen file")
        check_same_as_replay(page, lockstep, folder, "arena.lsr")
        browser.wait_for("document.body.dataset.drawnTick !== undefined", what="the page from disk to draw")
        # Another replay opened in the same page replaces the first: its verdict, its ticks, its hashes.
        browser.evaluate("lockstepView.seek(240)")
        browser.call("DOM.setFileInputFiles", {"files": [os.path.join(folder, "diverges.lsr")], "objectId": node["objectId"]})
        browser.wait_for("document.body.dataset.verdict.startsWith('desync')", what="the second file's verdict")
        page = verdict(browser, "the second file's verdict")
        check_same_as_replay(page, lockstep, folder, "diverges.lsr")
        browser.evaluate("lockstepView.seek(100)")
        browser.wait_for("document.body.dataset.drawnTick === '100'", what="the second replay's tick 100")
        shown = browser.evaluate("document.getElementById('hash').textContent")
        exported = json.loads(run(lockstep, "export", os.path.join(folder, "diverges.lsr"), "--from-tick", "100",
                                  "--to-tick", "100", "--fields", "pos_x").stdout.splitlines()[0])
        check(shown == exported["hash"], f"the second replay's tick 100 is drawn with its own hash {exported['hash']} ({shown})")

    return exit_code()


if __name__ == "__main__":
    sys.exit(main())

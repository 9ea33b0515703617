"""`lockstep view` in a real browser: the page at a fixed tick draws the bodies where the replay
has them and reports the tick and hash that `lockstep run` computes in its own process; a seek
answers; playing advances with interpolation; a desync's evidence bundle shows the first
divergent tick and highlights the body the field report names.

usage: view_page_test.py LOCKSTEP WORK_DIR [--docs DIR]   (--docs: also write docs/COMMANDS.md's pictures)
"""

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from checks import check, exit_code  # noqa: E402

BODY = (0x4a, 0xa3, 0xff)
BACKGROUND = (0x10, 0x14, 0x1c)
DIFFERS = (0xff, 0x3b, 0x3b)



def near(pixel, colour, tolerance=3):
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour))


def run(lockstep, *args, cwd=None):
    result = subprocess.run([lockstep, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"lockstep {' '.join(args)}: exit {result.returncode}: {result.stderr}")
    return result


def run_hash(lockstep, ticks):
    """The hash `lockstep run` prints after `ticks` ticks of the test's session, in its own process."""
    last = run(lockstep, "run", "--ticks", str(ticks), "--seed", "3").stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"tick (\d+) hash ([0-9a-f]{16})", last)
    assert match and int(match.group(1)) == ticks, last
    return match.group(2)


class Viewer:
    """A `lockstep view` process on a free port."""

    def __init__(self, lockstep, *args):
        self.process = subprocess.Popen([lockstep, "view", *args, "--port", "0"], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"open (http://\S+) in a browser", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"view printed {line!r}: {self.process.stderr.read()}")
        self.url = match.group(1)

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        out, _ = self.process.communicate(timeout=30)
        return self.process.returncode, out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def bodies_at(lockstep, replay, tick):
    row = json.loads(run(lockstep, "export", replay, "--from-tick", str(tick), "--to-tick", str(tick), "--fields",
                         "pos_x,pos_y,radius,inv_mass,player_body,link_a,link_b,spring_a,spring_b").stdout)
    fields = row["fields"]

    def array(name):
        values, i = [], 0
        while f"state.{name}[{i}]" in fields:
            values.append(fields[f"state.{name}[{i}]"])
            i += 1
        return values

    return row["hash"], {name: array(name) for name in
                         ("pos_x", "pos_y", "radius", "inv_mass", "player_body", "link_a", "link_b", "spring_a", "spring_b")}


def drawn_state(browser):
    return browser.evaluate("""(() => {
        const canvas = document.getElementById('world'), box = canvas.getBoundingClientRect();
        const [scale, x, y, flip] = canvas.dataset.transform.split(' ').map(Number);
        return {tick: document.getElementById('tick').textContent, hash: document.getElementById('hash').textContent,
                scale, x: x + box.left + canvas.clientLeft, y: y + box.top + canvas.clientTop, flip,
                seekMs: Number(document.body.dataset.seekMs)};
    })()""")


def open_at(browser, url, tick):
    browser.navigate(f"{url}?tick={tick}&paused=1")
    browser.wait_for(f"document.body.dataset.drawnTick === '{tick}'", timeout=120, what=f"the page to draw tick {tick}")
    return drawn_state(browser)


def screen(state, x, y):
    return state["x"] + state["scale"] * x, state["y"] + state["flip"] * state["scale"] * y


def check_pixels(png, state, bodies):
    """Three passive bodies that nothing drawn later covers have the body colour at their centre;
    points clear of every shape have the background."""
    n = len(bodies["pos_x"])
    px = [screen(state, bodies["pos_x"][i], bodies["pos_y"][i]) for i in range(n)]
    pr = [bodies["radius"][i] * state["scale"] for i in range(n)]
    special = set(b for b in bodies["player_body"]) | set(bodies["link_a"]) | set(bodies["link_b"]) \
        | set(bodies["spring_a"]) | set(bodies["spring_b"])
    chosen = []
    for i in range(n):
        if i in special or bodies["inv_mass"][i] == 0 or pr[i] < 3:
            continue
        clear = all(math.dist(px[i], px[j]) > pr[j] + 1.5 for j in range(i + 1, n))
        if clear:
            chosen.append(i)
        if len(chosen) == 3:
            break
    check(len(chosen) == 3, f"three passive bodies to look at (found {chosen})")
    for i in chosen:
        pixel = png.pixel(*px[i])
        check(near(pixel, BODY), f"body {i + 1} at ({px[i][0]:.0f}, {px[i][1]:.0f}) px has the body colour: {pixel}")
    segments = [(px[a], px[b]) for a, b in zip(bodies["link_a"] + bodies["spring_a"], bodies["link_b"] + bodies["spring_b"])]

    def clear_of_everything(p):
        if any(math.dist(p, px[i]) <= pr[i] + (18 if i in bodies["player_body"] else 3) for i in range(n)):
            return False
        for (a, b) in segments:
            ab = (b[0] - a[0], b[1] - a[1])
            length2 = ab[0] ** 2 + ab[1] ** 2 or 1e-9
            t = max(0, min(1, ((p[0] - a[0]) * ab[0] + (p[1] - a[1]) * ab[1]) / length2))
            if math.dist(p, (a[0] + t * ab[0], a[1] + t * ab[1])) <= 4:
                return False
        return True

    empty = []
    left, top = screen(state, 0, 0)
    right, bottom = screen(state, 1280, 720)
    for gy in range(1, 12):
        for gx in range(1, 16):
            p = (left + (right - left) * gx / 16, top + (bottom - top) * gy / 12)
            if clear_of_everything(p):
                empty.append(p)
    check(len(empty) >= 20, f"points clear of every shape ({len(empty)})")
    wrong = [(p, png.pixel(*p)) for p in empty if not near(png.pixel(*p), BACKGROUND)]
    check(not wrong, f"{len(empty)} points clear of every shape have the background colour"
          + (f"; not: {wrong[:3]}" if wrong else ""))


def evidence_bundle(lockstep, work):
    """The host's evidence bundle of a real desync (a peer perturbed after tick 150 of a 2-player
    session), the host's own recording, and the desync tick."""
    folder = os.path.join(work, "evidence")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    recording = os.path.join(work, "host-desync.lsr")
    common = ["--evidence-dir", folder]
    host = subprocess.Popen([lockstep, "host", "--open", "--port", port, "--players", "2", "--bot", "--ticks", "600", "--seed", "3",
                             "--wait-timeout", "60", "--record", recording, *common], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    peer = subprocess.Popen([lockstep, "join", f"127.0.0.1:{port}", "--bot", "--debug-perturb-tick", "150", *common],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    outs = [p.communicate(timeout=300)[0] for p in (host, peer)]
    found = [line[len("evidence: "):] for line in outs[0].splitlines() if line.startswith("evidence: ")]
    if len(found) != 1 or not found[0].endswith(".lsbundle"):
        raise RuntimeError("the desync left no bundle: " + " / ".join(outs))
    info = run(lockstep, "info", found[0]).stdout
    tick = re.search(r"desync at tick (\d+)", info)
    if not tick:
        raise RuntimeError("info names no desync tick: " + info)
    return found[0], recording, tick.group(1)


def main():
    lockstep, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    docs = os.path.abspath(sys.argv[sys.argv.index("--docs") + 1]) if "--docs" in sys.argv else None
    os.makedirs(work, exist_ok=True)
    replay = os.path.join(work, "arena.lsr")
    run(lockstep, "run", "--ticks", "1200", "--seed", "3", "--record", replay)
    expected_600, expected_1100 = run_hash(lockstep, 600), run_hash(lockstep, 1100)
    exported_hash, bodies = bodies_at(lockstep, replay, 600)
    check(exported_hash == expected_600, "export and run agree on tick 600's hash")

    with Viewer(lockstep, replay) as viewer, Browser() as browser:
        state = open_at(browser, viewer.url, 600)
        check(state["tick"] == "600", f"the page reports tick 600 ({state['tick']})")
        check(state["hash"] == expected_600, f"the page's hash at tick 600 is run's {expected_600} ({state['hash']})")
        png = browser.screenshot(os.path.join(work, "view-600.png"))
        check_pixels(png, state, bodies)
        if docs:
            shutil.copy(os.path.join(work, "view-600.png"), os.path.join(docs, "viewer.png"))

        browser.evaluate("lockstepView.seek(1100)")
        browser.wait_for("document.body.dataset.drawnTick === '1100'", timeout=60, what="the seek to 1100")
        state = drawn_state(browser)
        check(state["hash"] == expected_1100, f"after a seek the page shows tick 1100 with run's hash ({state['hash']})")
        print(f"     seek 600 -> 1100 answered and drawn in {state['seekMs']} ms")

        # At a quarter of the tick rate a display frame falls between ticks: alpha takes values
        # between 0 and 1 (at 1x on a 60 Hz display it would stay near one value).
        browser.navigate(f"{viewer.url}?tick=0&speed=0.25")
        browser.wait_for("Number(document.body.dataset.drawnTick) >= 5", timeout=60, what="playing to reach tick 5")
        alphas = set()
        for _ in range(40):
            alphas.add(browser.evaluate("document.getElementById('alpha').textContent"))
            time.sleep(0.01)
        between = sorted(a for a in alphas if 0.05 < float(a) < 0.95)
        check(len(between) >= 2, f"playing blends ticks with several alphas between 0 and 1 ({sorted(alphas)})")
        code, _ = viewer.stop()
        check(code == 0, f"view stops on SIGINT with exit 0 ({code})")

    bundle, host_recording, desync_tick = evidence_bundle(lockstep, work)
    with Viewer(lockstep, bundle) as viewer, Browser() as browser:
        state = open_at(browser, viewer.url, int(desync_tick))
        page = browser.evaluate("""({tick: document.getElementById('divergence-tick').textContent,
                                     fields: document.getElementById('divergence-fields').textContent,
                                     hidden: document.getElementById('divergence').hidden})""")
        check(not page["hidden"] and page["tick"] == desync_tick,
              f"the evidence view names the first divergent tick {desync_tick} ({page['tick']})")
        check("body 1: state.vel_x[0]" in page["fields"], f"the evidence view lists body 1's vel_x ({page['fields'][:80]})")
        png = browser.screenshot(os.path.join(work, "view-evidence.png"))
        _, evidence_bodies = bodies_at(lockstep, host_recording, int(desync_tick))
        x, y = screen(state, evidence_bodies["pos_x"][0], evidence_bodies["pos_y"][0])
        ring = evidence_bodies["radius"][0] * state["scale"] + 4
        pixels = [png.pixel(x + ring * math.cos(a / 8 * math.pi), y + ring * math.sin(a / 8 * math.pi)) for a in range(16)]
        check(sum(near(p, DIFFERS, 40) for p in pixels) >= 8,
              f"body 1, which the report names, is ringed in the highlight colour ({pixels[:4]})")
        if docs:
            shutil.copy(os.path.join(work, "view-evidence.png"), os.path.join(docs, "viewer-divergence.png"))

    return exit_code()


if __name__ == "__main__":
    sys.exit(main())

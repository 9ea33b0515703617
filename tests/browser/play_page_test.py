"""`lockstep play`, and `host`/`join --view`, in a real browser: real key events (the DevTools
protocol's Input domain, through the page's own keyboard handlers) become the local player's
inputs at the ticks the server says it sampled them; the recording holds exactly those inputs
and replays bit for bit; the page says when the session has ended, and when the host is lost.

usage: play_page_test.py LOCKSTEP WORK_DIR
"""

import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from checks import check, exit_code  # noqa: E402

# Every host gives up waiting for its players after this many seconds (exit 3), so a joiner that
# failed ends the test promptly instead of leaving the host waiting forever.
WAIT_TIMEOUT_S = "60"



def key(browser, kind, name, code, key_code, keys_after):
    """One real key event; returns the first tick the server played with the keys it leaves held
    (`keys_after`, as the page's KeyBits)."""
    browser.key(kind, name, code, key_code)
    return int(browser.wait_for(f"document.body.dataset.keys === '{keys_after}' && document.body.dataset.keysFromTick",
                                timeout=60, what=f"the server to apply keys {keys_after}"))


def wait_tick(browser, tick):
    browser.wait_for(f"Number(document.body.dataset.sessionTick) >= {tick}", timeout=120, what=f"tick {tick}")


def main():
    lockstep, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    record = os.path.join(work, "played.lsr")
    process = subprocess.Popen([lockstep, "play", "--ticks", "300", "--bodies", "100", "--seed", "5", "--record", record,
                                "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    banner = process.stdout.readline() + process.stdout.readline()
    url = re.search(r"open (http://\S+) in a browser", banner).group(1)
    with Browser() as browser:
        browser.navigate(url)
        wait_tick(browser, 20)
        up_from = key(browser, "keyDown", "ArrowUp", "ArrowUp", 38, 1)
        wait_tick(browser, up_from + 30)
        up_until = key(browser, "keyUp", "ArrowUp", "ArrowUp", 38, 0)
        wait_tick(browser, up_until + 10)
        # D (right, the WASD way), then space with it, then each let go.
        right_from = key(browser, "keyDown", "d", "KeyD", 68, 4)
        wait_tick(browser, right_from + 10)
        both_from = key(browser, "keyDown", " ", "Space", 32, 20)
        wait_tick(browser, both_from + 20)
        both_until = key(browser, "keyUp", " ", "Space", 32, 4)
        wait_tick(browser, both_until + 10)
        right_until = key(browser, "keyUp", "d", "KeyD", 68, 0)
        browser.wait_for("document.body.dataset.state === 'ended'", timeout=120, what="the page to say the session ended")
        ended = browser.evaluate("document.getElementById('status').textContent")
        check(ended == "the session has ended", f"the page says the session has ended ({ended!r})")
        drawn = browser.wait_for("document.body.dataset.drawnTick === '300' && document.getElementById('hash').textContent",
                                 timeout=30, what="the page to draw tick 300")
    out, err = process.communicate(timeout=60)
    check(process.returncode == 0, f"play exits 0 ({process.returncode}: {err.strip()})")
    final = out.strip().splitlines()[-1]
    check(final.split()[-1] == drawn, f"the page drew the hash play ended on ({drawn})")
    print(f"     up held for ticks {up_from}-{up_until - 1}, right for {right_from}-{right_until - 1} and action with it "
          f"for {both_from}-{both_until - 1}; {final}")

    replay = subprocess.run([lockstep, "replay", record], capture_output=True, text=True)
    check(replay.returncode == 0 and replay.stdout.strip().endswith(final.split()[-1]),
          f"the recording verifies and ends on play's hash ({replay.stdout.strip()})")
    rows = subprocess.run([lockstep, "export", record, "--inputs", "--fields", "params.tick_rate_hz"],
                          capture_output=True, text=True).stdout.splitlines()
    player0 = {row["tick"]: row["inputs"][0] for row in map(json.loads, rows) if row["tick"] > 0}
    expected = {t: "0000" for t in player0}
    for t in range(up_from, up_until):
        expected[t] = "0100"  # ButtonInput up, little-endian
    for t in range(right_from, right_until):
        expected[t] = "0400"  # right
    for t in range(both_from, both_until):
        expected[t] = "0c00"  # right and action
    wrong = [(t, player0[t], expected[t]) for t in sorted(player0) if player0[t] != expected[t]]
    check(len(player0) == 300 and not wrong,
          f"player 0's recorded inputs are the keys at the ticks the server applied them ({len(player0)} ticks; "
          f"wrong: {wrong[:4]})")
    two_replays(lockstep, work, record)
    networked(lockstep, work)
    predicted(lockstep, work)
    host_lost(lockstep)
    desync_shown(lockstep, work)
    return exit_code()


def two_replays(lockstep, work, played):
    """view A B: the played session against the same scene with a bot in slot 0; the page names
    the first divergent tick that `lockstep diff` finds, in its own process."""
    botted = os.path.join(work, "botted.lsr")
    subprocess.run([lockstep, "run", "--ticks", "300", "--bodies", "100", "--seed", "5", "--record", botted],
                   check=True, capture_output=True)
    diff = subprocess.run([lockstep, "diff", played, botted], capture_output=True, text=True).stdout
    expected = re.search(r"first divergence at tick (\d+)", diff).group(1)
    viewer = subprocess.Popen([lockstep, "view", played, botted, "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    url = re.search(r"open (http://\S+) in a browser", viewer.stdout.readline()).group(1)
    with Browser() as browser:
        browser.navigate(f"{url}?tick={expected}&paused=1")
        browser.wait_for(f"document.body.dataset.drawnTick === '{expected}'", timeout=120, what="the divergent tick")
        named = browser.evaluate("document.getElementById('divergence').hidden ? '' : "
                                 "document.getElementById('divergence-tick').textContent")
        marked = browser.evaluate("document.getElementById('divergence-fields').children.length")
    viewer.kill()
    viewer.wait()
    check(named == expected, f"view of two replays names diff's first divergent tick {expected} ({named!r}), "
                             f"with {marked} fields listed")


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def view_url(process, who):
    """Reads a participant's lines up to the one that gives its page's address."""
    for _ in range(50):
        line = process.stdout.readline()
        match = re.search(r"watch (?:and play )?at (http://\S+) in a browser", line)
        if match:
            return match.group(1)
    raise RuntimeError(f"{who} printed no page address")


def inputs_of(lockstep, record, slot):
    rows = subprocess.run([lockstep, "export", record, "--inputs", "--fields", "params.substeps"],
                          capture_output=True, text=True).stdout.splitlines()
    return {row["tick"]: row["inputs"][slot] for row in map(json.loads, rows) if row["tick"] > 0}


def networked(lockstep, work):
    """host --view: the host's page plays slot 0 of a real two-process session over UDP."""
    port, record = free_udp_port(), os.path.join(work, "hosted.lsr")
    host = subprocess.Popen([lockstep, "host", "--open", "--port", port, "--players", "2", "--ticks", "400", "--bodies", "100",
                             "--record", record, "--view=0", "--wait-timeout", WAIT_TIMEOUT_S], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = view_url(host, "host")
    peer = subprocess.Popen([lockstep, "join", f"127.0.0.1:{port}", "--bot"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    with Browser() as browser:
        browser.navigate(url)
        wait_tick(browser, 40)
        left_from = key(browser, "keyDown", "ArrowLeft", "ArrowLeft", 37, 2)
        wait_tick(browser, left_from + 30)
        left_until = key(browser, "keyUp", "ArrowLeft", "ArrowLeft", 37, 0)
        network = browser.evaluate("document.getElementById('network').textContent")
        check(re.fullmatch(r"input delay \d+ · rtt [0-9.]+ ms · stalls \d+ · latency \d+/\d+ ticks", network) is not None,
              f"the host's page shows the input delay, the round trip, stalls and the input latency ({network!r})")
        browser.wait_for("document.body.dataset.state === 'ended'", timeout=120, what="the session to end")
    out, _ = host.communicate(timeout=60)
    peer.wait(timeout=60)
    check(host.returncode == 0, f"host --view exits 0 ({host.returncode})")
    final = out.strip().splitlines()[-1]
    replay = subprocess.run([lockstep, "replay", record], capture_output=True, text=True)
    check(replay.returncode == 0 and replay.stdout.strip().endswith(final.split()[-1]),
          f"the host's recording verifies ({replay.stdout.strip()})")
    slot0 = inputs_of(lockstep, record, 0)
    wrong = [(t, v) for t, v in sorted(slot0.items()) if v != ("0200" if left_from <= t < left_until else "0000")]
    check(len(slot0) == 400 and not wrong,
          f"slot 0's recorded inputs are the host page's keys from tick {left_from} to {left_until - 1} (wrong: {wrong[:4]})")


def predicted(lockstep, work):
    """join --view under host --rollback 8: the page draws ticks ahead of the confirmed ones and says
    how far, with the input latency; the recording still verifies."""
    port, record = free_udp_port(), os.path.join(work, "predicted.lsr")
    host = subprocess.Popen([lockstep, "host", "--open", "--port", port, "--players", "2", "--ticks", "300", "--bodies", "100",
                             "--bot", "--rollback", "8", "--netsim", "delay=40,seed=3", "--wait-timeout", WAIT_TIMEOUT_S],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peer = subprocess.Popen([lockstep, "join", f"127.0.0.1:{port}", "--bot", "--record", record, "--view=0",
                             "--netsim", "delay=40,seed=4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = view_url(peer, "join")
    with Browser() as browser:
        browser.navigate(url)
        wait_tick(browser, 120)
        # The depth is the present's lead at one moment: read it until it shows one (a loaded machine
        # may have the peer just caught up at any one reading), at most until the session ends.
        network = ""
        for _ in range(100):
            network = browser.evaluate("document.getElementById('network').textContent")
            depth = re.search(r"prediction (\d+)/", network)
            if (depth is not None and int(depth.group(1)) >= 1) or browser.evaluate("document.body.dataset.state === 'ended'"):
                break
            time.sleep(0.05)
        browser.wait_for("document.body.dataset.state === 'ended'", timeout=120, what="the session to end")
    out, _ = peer.communicate(timeout=60)
    host.wait(timeout=60)
    check(re.fullmatch(r"input delay \d+ · rtt [0-9.]+ ms · stalls \d+ · latency \d+/\d+ ticks · prediction \d+/\d+",
                       network) is not None,
          f"the peer's page shows the prediction's depth and window with the latency ({network!r})")
    depth = re.search(r"prediction (\d+)/(\d+)", network)
    check(depth is not None and int(depth.group(1)) >= 1 and int(depth.group(2)) <= 8,
          f"through 40 ms each way the present tick runs ahead of the confirmed one ({network!r})")
    replay = subprocess.run([lockstep, "replay", record], capture_output=True, text=True)
    check(peer.returncode == 0 and replay.returncode == 0 and replay.stdout.strip().endswith(out.strip().split()[-1]),
          f"the peer's recording made with prediction verifies ({replay.stdout.strip()})")


def host_lost(lockstep):
    """join --view: when the host dies, the page says the host is lost."""
    port = free_udp_port()
    host = subprocess.Popen([lockstep, "host", "--open", "--port", port, "--players", "2", "--bot", "--ticks", "100000",
                             "--bodies", "50", "--wait-timeout", WAIT_TIMEOUT_S], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peer = subprocess.Popen([lockstep, "join", f"127.0.0.1:{port}", "--view=0", "--timeout-ms", "1000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = view_url(peer, "join")
    with Browser() as browser:
        browser.navigate(url)
        wait_tick(browser, 30)
        host.kill()
        host.wait()
        browser.wait_for("document.body.dataset.state === 'ended'", timeout=60, what="the page to hear the host is gone")
        said = browser.evaluate("document.getElementById('session').textContent")
        check("host lost" in said, f"the peer's page says the host is lost ({said!r})")
    peer.communicate(timeout=60)
    check(peer.returncode == 3, f"the peer exits 3 when the host is gone ({peer.returncode})")


def desync_shown(lockstep, work):
    """join --view: a desync is said on the page, with what became of the evidence."""
    port, evidence = free_udp_port(), os.path.join(work, "evidence")
    os.makedirs(evidence, exist_ok=True)
    host = subprocess.Popen([lockstep, "host", "--open", "--port", port, "--players", "2", "--bot", "--ticks", "1200",
                             "--bodies", "50", "--evidence-dir", evidence, "--wait-timeout", WAIT_TIMEOUT_S], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    peer = subprocess.Popen([lockstep, "join", f"127.0.0.1:{port}", "--bot", "--view=0", "--debug-perturb-tick", "300",
                             "--evidence-dir", evidence], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = view_url(peer, "join")
    with Browser() as browser:
        browser.navigate(url)
        browser.wait_for("document.body.dataset.state === 'ended'", timeout=120, what="the page to hear of the desync")
        said = browser.evaluate("document.getElementById('session').textContent")
        check("desync · desync at tick 300; evidence: " in said, f"the peer's page says the desync and its evidence ({said!r})")
    peer.communicate(timeout=60)
    host.communicate(timeout=60)
    check(peer.returncode == 1, f"the perturbed peer exits 1 ({peer.returncode})")


if __name__ == "__main__":
    sys.exit(main())

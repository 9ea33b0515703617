"""The static page's `?live=URL` in a real browser: a real `lockstep host --broadcast DIR`, its folder
and the folder `lockstep view --static` writes both served by a real web server from Debian's
packages (nginx, started here, with the cache headers docs/COMMANDS.md recommends). The page's
WebAssembly engine follows the broadcast as `lockstep spectate URL` does: it draws the session as
it goes, says how far behind live it is, and ends on the host's own `tick N hash H`; from tick 0
afterwards it verifies every hash to the same end; a segment damaged on the server is fetched
again and then reported; another site's broadcast is refused.

usage: live_page_test.py LOCKSTEP WORK_DIR
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from checks import check, exit_code  # noqa: E402

NGINX = "/usr/sbin/nginx"



def free_port(kind):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx serving `root` on a loopback port, in the foreground, one process."""

    def __init__(self, work, root):
        self.port = free_port(socket.SOCK_STREAM)
        prefix = os.path.join(work, "nginx")
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        temp = " ".join(f"{name}_temp_path {prefix}/{name};" for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        with open(os.path.join(prefix, "nginx.conf"), "w") as conf:
            conf.write(f"""daemon off; master_process off; worker_processes 1;
error_log {prefix}/logs/error.log; pid {prefix}/nginx.pid;
events {{ worker_connections 64; }}
http {{
  access_log off; {temp}
  include /etc/nginx/mime.types;
  types {{ application/octet-stream lss; }}
  server {{
    listen 127.0.0.1:{self.port}; root {root};
    location ~ \\.json$ {{ add_header Cache-Control "max-age=1"; }}
    location ~ \\.lss$ {{ add_header Cache-Control "public, max-age=31536000, immutable"; }}
  }}
}}
""")
        self.process = subprocess.Popen([NGINX, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.025)
        raise RuntimeError("nginx did not start")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=30)


def host(lockstep, live_dir):
    """A host of one bot and 480 ticks at 120 Hz (4 s), broadcasting into `live_dir`, once it says so."""
    process = subprocess.Popen([lockstep, "host", "--open", "--players", "1", "--bot", "--ticks", "480",
                                "--tick-rate", "120", "--port", str(free_port(socket.SOCK_DGRAM)),
                                "--broadcast", live_dir, "--bodies", "200"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("host: broadcasting into"):
            return process, lines
    raise RuntimeError(f"the host did not start broadcasting: {lines}")


def ended(browser, what, timeout=120):
    """Waits for the page's session to end; its state, status line and session data."""
    browser.wait_for("document.body.dataset.state === 'ended' || document.body.dataset.state === 'error'",
                     timeout=timeout, what=what)
    return browser.evaluate("""({state: document.body.dataset.state, status: document.getElementById('status').textContent,
                                 tick: document.body.dataset.sessionTick, hash: document.body.dataset.sessionHash,
                                 drawn: document.body.dataset.drawnTick})""")


def main():
    lockstep, work = (os.path.abspath(a) for a in sys.argv[1:3])
    work = os.path.join(work, "live")
    shutil.rmtree(work, ignore_errors=True)
    root = os.path.join(work, "www")
    os.makedirs(root)
    subprocess.run([lockstep, "view", "--static", os.path.join(root, "view")], check=True, capture_output=True, timeout=60)
    live = os.path.join(root, "live")

    with Nginx(work, root) as server, Browser() as browser:
        process, lines = host(lockstep, live)
        browser.navigate(f"{server.url}/view/index.html?live=/live/&behind=1")
        # While the session runs, the page draws it and says where it is against live.
        browser.wait_for("Number(document.body.dataset.drawnTick) > 0", timeout=60, what="the page to draw a live tick")
        progress = browser.wait_for("document.getElementById('session').textContent.includes('broadcast: tick') && "
                                    "document.getElementById('session').textContent", timeout=60,
                                    what="the page's line about the broadcast")
        check(re.search(r"broadcast: tick \d+, live \d+ \([0-9.]+ s behind\), segments \d+ \(0 fetched again\), "
                        r"\d+ bytes, stalls \d+", progress) is not None, f"the page says how far behind live it plays ({progress})")
        page = ended(browser, "the live page to reach the broadcast's end")
        out, _ = process.communicate(timeout=120)
        lines += out.splitlines()
        final = lines[-1]
        check(process.returncode == 0 and re.fullmatch(r"tick 480 hash [0-9a-f]{16}", final) is not None,
              f"the host ends its session ({final})")
        check(page["state"] == "ended" and page["status"] == final,
              f"the page following it live ends on the host's own line '{final}' ({page['status']})")
        check(page["tick"] == "480" and final.endswith(page["hash"] or "-"),
              f"its last state is the host's: tick {page['tick']} hash {page['hash']}")
        # The last frame arrives before the end; the page draws it at its next animation frame.
        drawn = browser.wait_for("document.body.dataset.drawnTick === '480' || "
                                 "(performance.now() > (window.endSeenAt ??= performance.now() + 5000) && "
                                 "document.body.dataset.drawnTick)", timeout=30, what="the page to draw the last tick")
        check(drawn is True or drawn == "480", f"it drew the last tick ({page['drawn']}, then {drawn})")

        # Afterwards, from tick 0, not behind at all: every hash of the session, to the same end.
        browser.navigate(f"{server.url}/view/index.html?live=/live&from=start&behind=0")
        page = ended(browser, "the page to follow the broadcast from its start")
        check(page["status"] == final, f"from tick 0 the page ends on the same line ({page['status']})")

        # A copy with one segment damaged (the same on every fetch): fetched twice, then reported.
        damaged = os.path.join(root, "damaged")
        shutil.copytree(live, damaged)
        name = sorted((n for n in os.listdir(damaged) if n.endswith("-3.lss")))[0]
        with open(os.path.join(damaged, name), "r+b") as f:
            data = bytearray(f.read())
            data[len(data) // 2] ^= 0x40
            f.seek(0)
            f.write(data)
        browser.navigate(f"{server.url}/view/index.html?live=/damaged/&from=start&behind=0")
        page = ended(browser, "the page to report the damaged segment")
        check(page["status"].startswith(f"segment 3 ({server.url}/damaged/{name}) failed twice: "),
              f"a segment damaged on the server is fetched again, then reported ({page['status']})")

        browser.navigate(f"{server.url}/view/index.html?live=//example.com/live/")
        page = ended(browser, "the page to refuse another site's broadcast")
        check(page["state"] == "error" and "this page's own site only" in page["status"],
              f"?live= from another site is refused ({page['status']})")

    return exit_code()


if __name__ == "__main__":
    sys.exit(main())

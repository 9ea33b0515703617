"""Drives Debian's headless Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe):
navigate, evaluate JavaScript, wait for a condition, dispatch keys, take screenshots. Standard
library only, so the tests need nothing beyond what the set-up script installs."""

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib


class BrowserError(Exception):
    pass


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise BrowserError("no Chromium on PATH (scripts/install-deps.sh installs Debian's chromium)")


class Browser:
    """One headless browser with one page. Use as a context manager."""

    def __init__(self, width=1280, height=860):
        self.profile = tempfile.mkdtemp(prefix="lockstep-chromium-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()

        def child_fds():
            # The protocol pipe is fds 3 (commands in) and 4 (answers out). Move both out of the
            # way first, so that neither is overwritten by the other's dup2.
            high_in, high_out = os.dup(to_browser_r) + 100, os.dup(from_browser_w) + 101
            os.dup2(to_browser_r, high_in)
            os.dup2(from_browser_w, high_out)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        args = [find_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                "--hide-scrollbars", "--force-device-scale-factor=1", f"--window-size={width},{height}",
                f"--user-data-dir={self.profile}", "about:blank"]
        self.process = subprocess.Popen(args, preexec_fn=child_fds, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.out = os.fdopen(to_browser_w, "wb", buffering=0)
        self.incoming = os.fdopen(from_browser_r, "rb", buffering=0)
        self.pending = b""
        self.next_id = 1
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.session = None
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self.pending:
            if time.monotonic() > deadline:
                raise BrowserError("the browser did not answer in time")
            chunk = self.incoming.read(65536)
            if not chunk:
                raise BrowserError("the browser closed its protocol pipe")
            self.pending += chunk
        message, self.pending = self.pending.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, timeout=30):
        """Sends one command and returns its result (events that arrive meanwhile are dropped)."""
        ident = self.next_id
        self.next_id += 1
        command = {"id": ident, "method": method, "params": params or {}}
        if self.session:
            command["sessionId"] = self.session
        self.out.write(json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == ident:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})

    def navigate(self, url):
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression, timeout=60, what=None):
        """Polls a JavaScript expression until it is truthy; returns its value. An expression that
        throws (the page is still loading) counts as not yet."""
        deadline = time.monotonic() + timeout
        last_error = ""
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
                if value:
                    return value
            except BrowserError as error:
                last_error = f" (last: {error})"
            time.sleep(0.05)
        raise BrowserError(f"timed out waiting for {what or expression}{last_error}")

    def key(self, kind, key, code, key_code):
        """A real key event through the browser's input pipeline (kind: keyDown or keyUp)."""
        self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code,
                                             "windowsVirtualKeyCode": key_code, "nativeVirtualKeyCode": key_code})

    def screenshot(self, path):
        data = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])
        with open(path, "wb") as f:
            f.write(data)
        return Png(data)


class Png:
    """The pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are)."""

    def __init__(self, data):
        if data[:8] != b"\x89PNG\r\n\x1a\n":
            raise BrowserError("not a PNG")
        at, idat = 8, b""
        while at < len(data):
            length, kind = struct.unpack(">I4s", data[at:at + 8])
            body = data[at + 8:at + 8 + length]
            if kind == b"IHDR":
                self.width, self.height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
                if depth != 8 or colour not in (2, 6) or interlace:
                    raise BrowserError(f"unsupported PNG (depth {depth}, colour type {colour})")
                self.channels = 3 if colour == 2 else 4
            elif kind == b"IDAT":
                idat += body
            at += 12 + length
        raw = zlib.decompress(idat)
        stride = self.width * self.channels
        rows, previous = [], bytearray(stride)
        for y in range(self.height):
            start = y * (stride + 1)
            kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
            for x in range(stride):
                a = line[x - self.channels] if x >= self.channels else 0
                b = previous[x]
                c = previous[x - self.channels] if x >= self.channels else 0
                if kind == 1:
                    line[x] = (line[x] + a) & 255
                elif kind == 2:
                    line[x] = (line[x] + b) & 255
                elif kind == 3:
                    line[x] = (line[x] + (a + b) // 2) & 255
                elif kind == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            rows.append(line)
            previous = line
        self.rows = rows

    def pixel(self, x, y):
        row = self.rows[int(y)]
        at = int(x) * self.channels
        return tuple(row[at:at + 3])

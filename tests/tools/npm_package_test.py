"""The npm package lockstep-engine: `npm pack` in the WebAssembly build's tools folder makes a
tarball that installs into a scratch project with no network, and its JavaScript API, under node,
verifies a native recording with the verdict `lockstep replay` prints, seeks and steps it with the
hashes `lockstep run` and `lockstep export` compute in their own processes, reads a state's fields
by the field report's names, and refuses a bad file with the command line's error.

usage: npm_package_test.py LOCKSTEP WEB_TOOLS_DIR WORK_DIR
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message, flush=True)
    if not condition:
        failures.append(message)


def run(*args, cwd=None, codes=(0,)):
    result = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=600)
    if result.returncode not in codes:
        raise RuntimeError(f"{' '.join(args)}: exit {result.returncode}: {result.stderr}")
    return result


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


SCRIPT = r"""
const fs = require('fs');
const { openReplay, LockstepError } = require('lockstep-engine');
(async () => {
  const out = {};
  const replay = await openReplay(fs.readFileSync('rec.lsr'), { name: 'rec.lsr' });
  Object.assign(out, { code: replay.code, verdict: replay.verdict, end_tick: replay.tick, end_hash: replay.hash,
                       start: replay.startTick, last: replay.lastTick });
  replay.seek(300);
  out.hash_300 = replay.hash;
  out.recorded_300 = replay.recordedHash;
  replay.step();
  out.tick_301 = replay.tick;
  out.hash_301 = replay.hash;
  const fields = replay.fields();
  out.field_names = Object.keys(fields).length;
  out.pos_x_0 = fields['state.pos_x[0]'];
  replay.seek(replay.lastTick);
  try { replay.step(); out.past_end = 'stepped'; } catch (e) { out.past_end = (e instanceof LockstepError) + ' ' + e.message; }
  const bad = await openReplay(fs.readFileSync('bad.lsr'), { name: 'bad.lsr' });
  Object.assign(out, { bad_code: bad.code, bad_verdict: bad.verdict });
  try { bad.step(); out.bad_step = 'stepped'; } catch (e) { out.bad_step = (e instanceof LockstepError) + ' ' + e.message; }
  // Replays side by side keep their own state; a closed one says so; the process keeps its handlers.
  const other = await openReplay(fs.readFileSync('rec.lsr'), { name: '..' });
  other.seek(100);
  out.side_by_side = replay.tick === 600 && other.tick === 100;
  other.close();
  try { other.hash; out.closed = 'answered'; } catch (e) { out.closed = (e instanceof LockstepError) + ' ' + e.message; }
  out.handlers = process.listenerCount('uncaughtException') + process.listenerCount('unhandledRejection');
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def main():
    lockstep, tools, work = (os.path.abspath(a) for a in sys.argv[1:4])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    packed = last_line(run("npm", "pack", tools, cwd=work).stdout)
    tarball = os.path.join(work, packed)
    with tarfile.open(tarball) as tar:
        names = sorted(tar.getnames())
    check(names == ["package/README.md", "package/index.d.ts", "package/index.js", "package/lockstep-web.js",
                    "package/package.json"], f"npm pack packs the engine, its API and nothing else ({names})")

    scratch = os.path.join(work, "scratch")
    os.makedirs(scratch)
    with open(os.path.join(scratch, "package.json"), "w") as f:
        json.dump({"name": "scratch", "version": "1.0.0", "private": True}, f)
    run("npm", "install", "--offline", "--no-audit", "--no-fund", tarball, cwd=scratch)

    session = ["--players", "2", "--bodies", "300", "--seed", "4"]
    run(lockstep, "run", *session, "--ticks", "600", "--record", os.path.join(scratch, "rec.lsr"), "--keyframe-every", "200")
    with open(os.path.join(scratch, "bad.lsr"), "wb") as f:
        f.write(b"not a replay")
    with open(os.path.join(scratch, "check.js"), "w") as f:
        f.write(SCRIPT)
    got = json.loads(last_line(run("node", "check.js", cwd=scratch).stdout))

    native = run(lockstep, "replay", "rec.lsr", cwd=scratch)
    check(got["code"] == 0 and got["verdict"] == last_line(native.stdout),
          f"the package verifies a native recording with replay's verdict '{last_line(native.stdout)}' ({got['code']}, '{got['verdict']}')")
    final = re.search(r"final hash ([0-9a-f]{16})", got["verdict"])
    check(final is not None and got["end_hash"] == final.group(1) and got["end_tick"] == 600,
          f"after verifying, the state is tick 600 with the final hash ({got['end_tick']} {got['end_hash']})")
    run_300 = re.fullmatch(r"tick 300 hash ([0-9a-f]{16})", last_line(run(lockstep, "run", *session, "--ticks", "300").stdout))
    check(run_300 is not None and got["hash_300"] == run_300.group(1) == got["recorded_300"],
          f"seek(300) gives run's and the file's hash ({got['hash_300']})")
    exported = json.loads(run(lockstep, "export", os.path.join(scratch, "rec.lsr"), "--from-tick", "301", "--to-tick", "301",
                              "--fields", "pos_x").stdout.splitlines()[0])
    check(got["tick_301"] == 301 and got["hash_301"] == exported["hash"], f"step() gives export's tick 301 hash ({got['hash_301']})")
    check(got["pos_x_0"] is not None and float(got["pos_x_0"]) == exported["fields"]["state.pos_x[0]"],
          f"fields() names state.pos_x[0] as the field report does, with export's value ({got['pos_x_0']})")
    check(got["field_names"] > 300, f"fields() lists the whole state ({got['field_names']} fields)")
    check(got["past_end"].startswith("true ") and "past the replay's last tick" in got["past_end"],
          f"stepping past the end throws a LockstepError ({got['past_end']})")
    check(got["bad_step"] == "true no replay is open: " + got["bad_verdict"], f"a file that did not open cannot be stepped ({got['bad_step']})")
    check(got["side_by_side"], "two replays opened side by side keep their own ticks")
    check(got["closed"] == "true the replay is closed", f"a closed replay says so ({got['closed']})")
    check(got["handlers"] == 0, f"the engine adds no handlers to the node process ({got['handlers']})")
    bad = run(lockstep, "replay", "bad.lsr", cwd=scratch, codes=(2,))
    check(got["bad_code"] == 2 and got["bad_verdict"] == last_line(bad.stderr),
          f"a bad file gets replay's one-line error '{last_line(bad.stderr)}' ({got['bad_verdict']})")

    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

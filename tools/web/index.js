// lockstep-engine: lockstep's engine in WebAssembly for JavaScript. A replay's bytes in, its
// verdict out (the lines `lockstep replay FILE` prints, and its exit code), then the replay
// stepped tick by tick with each state's hash and fields (named as `lockstep diff` names them).
//
//   const { openReplay } = require('lockstep-engine');
//   const replay = await openReplay(fs.readFileSync('session.lsr'), { name: 'session.lsr' });
//   console.log(replay.verdict);          // "ok 1200 ticks verified, 1200 hashes checked, final hash …"
//   replay.seek(0); replay.step();        // tick 1, its recorded hash checked
//   replay.hash, replay.fields()['state.pos_x[0]']
//
// Each replay has an engine (a WebAssembly instance) of its own, so replays opened side by side do
// not disturb each other; `close()` lets its memory go.
'use strict';

const createLockstepEngine = require('./lockstep-web.js');

/// The largest replay opened (bytes); the engine itself bounds everything the file says.
const MAX_REPLAY_BYTES = 512 * 1024 * 1024;

/// Exit codes, as the command line's: 0 verified, 1 a recorded hash not reproduced, 2 a bad file,
/// 4 played but no recorded hash to check.
const EXIT = Object.freeze({ ok: 0, failed: 1, usage: 2, unverified: 4 });

class LockstepError extends Error {}

class Replay {
  constructor(module, lines, code, seconds) {
    this._module = module;
    this._lines = lines;
    /// The exit code `lockstep replay` gives this file (EXIT).
    this.code = code;
    /// The lines `lockstep replay` prints: stdout's and stderr's (notes, errors).
    this.out = lines.out.slice();
    this.err = lines.err.slice();
    /// Its last line: "ok N ticks verified, H hashes checked, final hash …" or the first divergence.
    this.verdict = this.out.length ? this.out[this.out.length - 1] : (this.err[this.err.length - 1] || '');
    /// Seconds the verification took.
    this.seconds = seconds;
  }

  get ok() { return this.code === EXIT.ok; }
  get startTick() { return this._open()._lockstep_web_start_tick(); }
  get lastTick() { return this._open()._lockstep_web_last_tick(); }
  /// The tick of the current state (after verify: the last tick, or the first divergent one).
  get tick() { return this._open()._lockstep_web_tick(); }
  /// The current state's XXH3-64 hash, 16 hex digits.
  get hash() { return this._text(this._open()._lockstep_web_hash()); }
  /// The hash the file records for the current tick, or null.
  get recordedHash() { return this._text(this._open()._lockstep_web_recorded_hash()) || null; }

  /// One tick forward from the current state, its recorded hash checked; throws LockstepError on
  /// a divergence or past the end.
  step() { this._call((m) => m._lockstep_web_step()); return this; }
  /// Moves to `tick` as `lockstep replay --from-tick` does: from the nearest keyframe whose hash
  /// the file records, checking recorded hashes on the way.
  seek(tick) {
    if (!Number.isSafeInteger(tick) || tick < 0) throw new LockstepError(`tick ${tick} is not a whole number of at least 0`);
    this._call((m) => m._lockstep_web_seek(tick));
    return this;
  }
  /// Every field of the current state: { "tick": "…", "state.pos_x[0]": "…", … }, in report order.
  fields() { return JSON.parse(this._text(this._open()._lockstep_web_fields())); }
  /// Lets the engine (its WebAssembly memory) go; the replay cannot be used after.
  close() { this._module = null; }

  _open() {
    if (!this._module) throw new LockstepError('the replay is closed');
    if (this.code === EXIT.usage) throw new LockstepError(`no replay is open: ${this.verdict}`);
    return this._module;
  }

  _text(pointer) { return this._module.UTF8ToString(pointer); }

  _call(f) {
    const module = this._open();
    this._lines.err.length = 0;
    if (f(module) !== 0) {
      const line = this._lines.err[this._lines.err.length - 1] || 'error: the engine failed';
      throw new LockstepError(line.replace(/^error: /, ''));
    }
  }
}

/// Verifies a replay's bytes (a Uint8Array, ArrayBuffer or Buffer) as `lockstep replay NAME` does
/// and returns a Replay. A file the command line refuses gives a Replay with code 2 and its error
/// line as the verdict. Options: name (used in messages, default "replay.lsr"), maxStateMb (as
/// --max-state-mb), onProgress(label, done, total).
async function openReplay(bytes, options = {}) {
  const view = bytes instanceof ArrayBuffer ? new Uint8Array(bytes)
    : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let name = String(options.name || 'replay.lsr').replace(/[/\\\0]/g, '_').slice(-200);
  if (name === '.' || name === '..') name = 'replay.lsr';  // the file's name in its own folder
  const maxStateMb = options.maxStateMb === undefined ? 0 : options.maxStateMb;  // 0: the command line's default
  const lines = { out: [], err: [] };
  const module = await createLockstepEngine({
    print: (line) => lines.out.push(line),
    printErr: (line) => lines.err.push(line),
    onProgress: options.onProgress || (() => {}),
  });
  const started = Date.now();
  let code = EXIT.usage;
  if (view.byteLength > MAX_REPLAY_BYTES) {
    lines.err.push(`error: '${name}' is ${view.byteLength} bytes; this engine opens replays of at most ${MAX_REPLAY_BYTES}`);
  } else {
    module.FS.mkdir('/replays');  // a folder of its own: no name meets one of the module's files
    module.FS.chdir('/replays');
    module.FS.writeFile(name, view);
    code = module.ccall('lockstep_web_open', 'number', ['string', 'number'], [name, maxStateMb]);
    module.FS.unlink(name);  // read whole: the engine holds what it needs
  }
  return new Replay(module, lines, code, (Date.now() - started) / 1000);
}

module.exports = { openReplay, Replay, LockstepError, EXIT };

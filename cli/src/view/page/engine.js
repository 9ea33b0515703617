// The viewer's engine in the page, for the folder `lockstep view --static` writes: lockstep's
// WebAssembly build (lockstep-web.js) re-simulates a replay the person opens and answers the page
// as `lockstep view`'s server does — the same hello, the same frame batches for the same requests
// (view_protocol.hpp) — after verifying it as `lockstep replay` does, with the same lines.
// Served over HTTP it runs in a worker (this file again), so the page stays live while it
// verifies; opened from disk, where browsers refuse workers, in the page itself. Served over HTTP
// it also follows a live broadcast (`host --broadcast DIR`, the page's ?live=URL) as `lockstep
// spectate URL` does: the worker fetches, the engine decides what, checks every byte before it is
// used, plays --behind seconds behind live with every recorded hash verified, and draws each tick.
'use strict';

const ENGINE_SCRIPT = 'lockstep-web.js';
const MAX_REPLAY_BYTES = 512 * 1024 * 1024;  // what the page reads into memory at most
// This file's own address, taken while it loads (later, document.currentScript is another script).
const ENGINE_GLUE = typeof document !== 'undefined' && document.currentScript ? document.currentScript.src : 'engine.js';

const MAX_REQUEST_BYTES = 64;  // the viewer's requests are a few bytes (view_protocol.hpp)

/// A replay's name as a file in the engine's folder: its last part, never '.', '..' or empty.
function safeName(name) {
  const file = String(name).replace(/[/\\\0]/g, '_').slice(-200);
  return file === '' || file === '.' || file === '..' ? 'replay.lsr' : file;
}

/// A response's body, refused as soon as it passes `limit` bytes (whatever its headers say).
async function readBounded(response, limit, name) {
  const reader = response.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      reader.cancel();
      throw new Error(`${name} is more than ${limit} bytes, the most this page reads of it`);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) { bytes.set(chunk, at); at += chunk.byteLength; }
  return bytes;
}

// Following a broadcast: the rules of `lockstep spectate URL` (cli/detail/broadcast_follower.hpp).
const MANIFEST_BYTES = 64 * 1024;  // replay::k_max_manifest_bytes
const MANIFEST_POLL_MS = 500;      // the manifest fetched again while the next segment is not out
const SILENCE_MS = 15000;          // a broadcast standing still this long is given up
const FETCH_TIMEOUT_MS = 10000;    // one fetch
const PLAY_EVERY_MS = 8;           // how often the worker plays on and fetches what is due
const LIVE = { nothingNew: 0, frame: 1, ended: 2, desync: 3, failed: 4 };  // lockstep_web_live_play
const MANIFEST = { ok: 0, anotherBroadcast: 2 };                            // lockstep_web_live_manifest

/// Follows the broadcast at `base` (its folder's URL) until it ends, fails or `current()` turns
/// false (the page opened something else), posting the live page's messages: its hello, a frame
/// a tick, a status a second, and the end (`tick N hash H`), a desync or why it failed.
async function followBroadcast(module, post, lines, base, options, current) {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const say = (message) => { if (current()) post(message); };  // nothing once the page opened something else
  const lastError = () => (lines.err.length ? lines.err[lines.err.length - 1].replace(/^error: /, '') : 'the engine failed');
  const status = (phase, message) =>
    say(module.ccall('lockstep_web_live_status', 'string', ['string', 'string'], [phase, message]));
  const withBytes = (bytes, call) => {
    const at = module._malloc(Math.max(1, bytes.length));
    if (at === 0) throw new Error('the engine is out of memory');
    module.HEAPU8.set(bytes, at);
    try { return call(at, bytes.length); } finally { module._free(at); }
  };
  const fetchBytes = async (name, limit, again) => {
    const url = new URL(name, base);
    if (again) url.search = 'refetch=1';  // past any cache: a static server ignores it, a cache keys on it
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), FETCH_TIMEOUT_MS);
    try {
      const response = await fetch(url, { signal: abort.signal, cache: again ? 'reload' : 'default' });
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      return await readBounded(response, limit, url.href);
    } catch (error) {
      throw new Error(error.name === 'AbortError' ? `${url}: no answer in ${FETCH_TIMEOUT_MS / 1000} s` : error.message);
    } finally {
      clearTimeout(timer);
    }
  };
  const takeManifest = async () => {
    const code = withBytes(await fetchBytes('manifest.json', MANIFEST_BYTES, false),
                           (at, size) => module._lockstep_web_live_manifest(at, size));
    if (code === MANIFEST.anotherBroadcast) throw Object.assign(new Error(lastError()), { fatal: true });
    if (code !== MANIFEST.ok) throw new Error(lastError());
  };
  const segment = (number) => JSON.parse(module.UTF8ToString(module._lockstep_web_live_segment(number)));
  /// Segment `number`, whole by `whole(bytes)`: fetched once more past any cache when it is not.
  const fetchWhole = async (number, whole) => {
    const { name, bytes: limit } = segment(number);
    let problem = '';
    for (const again of [false, true]) {
      try {
        const bytes = await fetchBytes(name, limit, again);
        if (whole(bytes)) return { bytes, again };
        module._lockstep_web_live_fetched(bytes.length);
        problem = lastError();
      } catch (error) {
        problem = error.message;
      }
    }
    throw new Error(`segment ${number} (${new URL(name, base)}) failed twice: ${problem}`);
  };

  // The manifest (a host that has just started may not have written it yet), the opening and the
  // keyframe segment to start at.
  const began = performance.now();
  for (;;) {
    try { await takeManifest(); break; } catch (error) {
      if (error.fatal || performance.now() - began > SILENCE_MS) throw error;
      await sleep(MANIFEST_POLL_MS);
      if (!current()) return;
    }
  }
  if (!current()) return;
  const { name: openingName, bytes: openingBytes } = segment(0);
  const opening = await fetchBytes(openingName, openingBytes, false);
  if (opening.length !== openingBytes) {
    throw new Error(`${new URL(openingName, base)} is ${opening.length} bytes, not the ${openingBytes} the manifest gives`);
  }
  // The keyframe segment to start at is fetched again when it is damaged (whole: its chunks and
  // its keyframe read); a start that fails otherwise (another simulation, another start hash) is
  // reported at once, as spectate does.
  const start = module._lockstep_web_live_start_segment(options.fromStart ? 1 : 0, options.behind);
  const both = (keyframe, call) => withBytes(opening, (at, size) => withBytes(keyframe, (kat, ksize) => call(at, size, kat, ksize)));
  let keyframe = { bytes: new Uint8Array(0), again: false };
  if (start !== 0) {
    keyframe = await fetchWhole(start, (bytes) =>
      both(bytes, (at, size, kat, ksize) => module._lockstep_web_live_start_whole(at, size, kat, ksize, start)) === 0);
  }
  if (!current()) return;
  const opened = both(keyframe.bytes, (at, size, kat, ksize) =>
    module._lockstep_web_live_open(at, size, kat, ksize, start, keyframe.again ? 1 : 0, options.behind, performance.now()));
  if (opened !== 0) throw new Error(lastError());
  say(module.ccall('lockstep_web_live_hello', 'string', ['string'], [base]));

  let lastArrival = performance.now(), lastPoll = performance.now(), lastLine = performance.now();
  while (current()) {
    const now = performance.now();
    for (let taken = 0; taken < 4; ++taken) {  // a few a round, so that the pace holds while catching up
      const next = module._lockstep_web_live_next();
      if (next === -1) break;
      if (next === 0) {
        if (now - lastArrival > SILENCE_MS) {
          throw new Error(`the broadcast at ${base} has stood still for ${SILENCE_MS / 1000} s (its host stopped, or its files are not reaching this server)`);
        }
        if (now - lastPoll >= MANIFEST_POLL_MS) {
          lastPoll = now;
          // One that fails to arrive is tried again at the next poll, until the silence ends it.
          try { await takeManifest(); } catch (error) { if (error.fatal) throw error; }
        }
        break;
      }
      const got = await fetchWhole(next, (bytes) => withBytes(bytes, (at, size) => module._lockstep_web_live_check(at, size)) === 0);
      if (!current()) return;
      if (withBytes(got.bytes, (at, size) => module._lockstep_web_live_append(at, size, got.again ? 1 : 0)) !== 0) {
        throw new Error(lastError());
      }
      lastArrival = performance.now();
    }
    const played = module._lockstep_web_live_play(performance.now());
    if (played === LIVE.frame) {
      const data = module._lockstep_web_live_frame_data(), size = module._lockstep_web_live_frame_size();
      say(module.HEAPU8.slice(data, data + size).buffer);
    } else if (played === LIVE.ended || played === LIVE.desync) {
      return status(played === LIVE.ended ? 'ended' : 'desync', lines.out[lines.out.length - 1]);
    } else if (played === LIVE.failed) {
      throw new Error(lastError());
    }
    if (now - lastLine >= 1000) {
      lastLine = now;
      status('running', '');
    }
    await sleep(PLAY_EVERY_MS);
  }
}

function tooLarge(name, bytes) {
  return `error: '${name}' is ${bytes} bytes or more; this page opens replays of at most ${MAX_REPLAY_BYTES} bytes`;
}

/// The engine itself, wherever it runs: `post` carries its messages (a string of JSON, or the
/// ArrayBuffer of a frame batch) to the page.
function lockstepEngineCore(post) {
  let out = [], err = [];
  const loaded = createLockstepEngine({
    print: (line) => out.push(line),
    printErr: (line) => err.push(line),
    onProgress: (label, done, total) => post(JSON.stringify({ type: 'progress', label, done, total })),
  }).then((module) => {
    module.FS.mkdir('/replays');
    module.FS.chdir('/replays');
    return module;
  });
  const text = new TextDecoder();
  let following = 0;  // which follow is current: opening a replay or another broadcast ends the one before
  return {
    async open(name, bytes) {
      const module = await loaded;
      ++following;
      // The file keeps its own name, so notes and errors name it as `lockstep replay NAME` would.
      const file = safeName(name);
      out = []; err = [];
      const started = performance.now();
      let code = 2;
      if (bytes.byteLength > MAX_REPLAY_BYTES) {
        err.push(tooLarge(file, bytes.byteLength));
      } else {
        module.FS.writeFile(file, new Uint8Array(bytes));
        code = module.ccall('lockstep_web_open', 'number', ['string', 'number'], [file, 0]);
        module.FS.unlink(file);  // read whole: the engine holds what it needs
      }
      const seconds = (performance.now() - started) / 1000;
      post(JSON.stringify({ type: 'verdict', file, code, out, err, seconds }));
      const hello = module.UTF8ToString(module._lockstep_web_hello());  // empty when no replay is open
      if (hello) post(hello);
    },
    /// Follows the broadcast at `url` (`{behind, fromStart}` as spectate's options) until it ends.
    async follow(url, options) {
      const module = await loaded;
      const mine = ++following;
      out = []; err = [];
      module._lockstep_web_live_close();
      try {
        await followBroadcast(module, post, { get out() { return out; }, get err() { return err; } }, url, options,
                              () => following === mine);
      } catch (error) {
        if (following !== mine) return;
        post(module.ccall('lockstep_web_live_status', 'string', ['string', 'string'], ['failed', error.message]));
      }
    },
    async request(buffer) {
      const module = await loaded;
      const bytes = new Uint8Array(buffer);
      if (bytes.length > MAX_REQUEST_BYTES) {
        return post(JSON.stringify({ type: 'error', message: `a request of ${bytes.length} bytes (at most ${MAX_REQUEST_BYTES})` }));
      }
      const at = module._malloc(Math.max(1, bytes.length));
      if (at === 0) return post(JSON.stringify({ type: 'error', message: 'the engine is out of memory' }));
      module.HEAPU8.set(bytes, at);
      const binary = module._lockstep_web_answer(at, bytes.length);
      module._free(at);
      const data = module._lockstep_web_answer_data(), size = module._lockstep_web_answer_size();
      const answer = module.HEAPU8.slice(data, data + size);
      post(binary === 1 ? answer.buffer : text.decode(answer));
    },
  };
}

if (typeof document === 'undefined' && typeof importScripts === 'function') {
  // In the worker: the page's messages are {open: name, bytes}, {follow: url, behind, fromStart}
  // or a request's ArrayBuffer.
  importScripts(ENGINE_SCRIPT);
  const engine = lockstepEngineCore((message) => postMessage(message));
  let queue = Promise.resolve();  // one at a time, in order, as a socket would answer
  onmessage = (event) => {
    // A broadcast is followed beside the queue: it goes on until it ends.
    if (event.data.follow !== undefined) return engine.follow(event.data.follow, event.data);
    queue = queue.then(() => (event.data instanceof ArrayBuffer ? engine.request(event.data)
      : engine.open(event.data.open, event.data.bytes))).catch((error) =>
      postMessage(JSON.stringify({ type: 'error', message: `the engine failed: ${error.message}` })));
  };
} else {
  /// A channel to the engine for viewer.js, like its WebSocket: `onMessage` hears what the engine
  /// says; `send` takes a request; `open` a replay's name and bytes.
  window.lockstepEngineChannel = (onMessage) => {
    const channel = lockstepEngineChannelTo(onMessage);
    channel.maxBytes = MAX_REPLAY_BYTES;  // the page reads no more than this of a file or URL
    return channel;
  };
  function lockstepEngineChannelTo(onMessage) {
    if (location.protocol !== 'file:') {
      const worker = new Worker(ENGINE_GLUE);
      worker.onmessage = (event) => onMessage(event.data);
      worker.onerror = (event) => onMessage(JSON.stringify({ type: 'error', message: `the engine failed to start: ${event.message}` }));
      return { ready: () => true, send: (buffer) => worker.postMessage(buffer, [buffer]),
               open: (name, bytes) => worker.postMessage({ open: name, bytes }, [bytes]),
               follow: (url, options) => worker.postMessage({ follow: url, ...options }) };
    }
    // From disk: the engine in the page (the page waits while it verifies).
    let engine = null;
    const started = new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = ENGINE_SCRIPT;
      script.onload = () => { engine = lockstepEngineCore((message) => setTimeout(() => onMessage(message))); resolve(); };
      script.onerror = () => reject(new Error(`cannot load ${ENGINE_SCRIPT} beside this page`));
      document.head.appendChild(script);
    });
    const fail = (error) => onMessage(JSON.stringify({ type: 'error', message: error.message }));
    let queue = started.catch(fail);
    return { ready: () => engine !== null,
             send: (buffer) => { queue = queue.then(() => engine.request(buffer)).catch(fail); },
             open: (name, bytes) => { queue = queue.then(() => engine.open(name, bytes)).catch(fail); },
             follow: () => fail(new Error('?live= follows a broadcast only when this page is served over HTTP, not opened from disk')) };
  }
}

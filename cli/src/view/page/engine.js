// The viewer's engine in the page, for the folder `lockstep view --static` writes: lockstep's
// WebAssembly build (lockstep-web.js) re-simulates a replay the person opens and answers the page
// as `lockstep view`'s server does — the same hello, the same frame batches for the same requests
// (view_protocol.hpp) — after verifying it as `lockstep replay` does, with the same lines.
// Served over HTTP it runs in a worker (this file again), so the page stays live while it
// verifies; opened from disk, where browsers refuse workers, in the page itself.
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
  return {
    async open(name, bytes) {
      const module = await loaded;
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
  // In the worker: the page's messages are {open: name, bytes} or a request's ArrayBuffer.
  importScripts(ENGINE_SCRIPT);
  const engine = lockstepEngineCore((message) => postMessage(message));
  let queue = Promise.resolve();  // one at a time, in order, as a socket would answer
  onmessage = (event) => {
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
               open: (name, bytes) => worker.postMessage({ open: name, bytes }, [bytes]) };
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
             open: (name, bytes) => { queue = queue.then(() => engine.open(name, bytes)).catch(fail); } };
  }
}

// lockstep's viewer: draws frames at the display's rate, blending the two latest ticks with alpha
// from a fixed-step accumulator, the way the engine's FixedClock does. The frames come from the
// server over a WebSocket (protocol: view_protocol.hpp) or, in the folder `view --static` writes,
// from lockstep's WebAssembly engine in the page (engine.js), which answers the same messages for
// a replay the person opens. No build step, no external resources.
'use strict';

const params = new URLSearchParams(location.search);
const WINDOW = 120;            // frames asked for at once, and kept ahead of the playhead
const KEEP_BEHIND = 2;         // frames kept behind it (the previous tick, for blending)
const MAX_FRAME_SECONDS = 0.25;  // a longer pause between two display frames is not caught up
const SPEEDS = [0.25, 0.5, 1, 2, 4, 8];

const SHAPE = { body: 1, fixed: 2, player: 3, spring: 4, rope: 5, wall: 6 };
const WORLD_FLAG = { recorded: 1, mismatch: 2, absent: 4, notDrawable: 8, yUp: 16 };
const PLAYER_COLOURS = ['#ff9f1c', '#2ec4b6', '#e71d73', '#c6e03b', '#b388ff', '#ffd166', '#06d6a0', '#f78c6b'];
const COLOUR = { background: '#10141c', body: '#4aa3ff', fixed: '#8892a0', spring: '#e0c050', rope: '#c08040',
                 wall: '#5a6270', differs: '#ff3b3b' };
/// Each world drawn over the first (a comparison's second, an evidence bundle's other groups).
const OVERLAY_COLOURS = ['#ff8cff', '#7dffb0', '#ffd27d', '#7dc8ff', '#c8a0ff', '#ffffff', '#b0ff5a'];

const $ = (id) => document.getElementById(id);
const view = {
  hello: null, frames: new Map(), tick: 0, playing: params.get('paused') !== '1',
  speed: SPEEDS.includes(Number(params.get('speed'))) ? Number(params.get('speed')) : 1,
  interpolate: params.get('interp') !== '0', accumulator: 0, lastTime: null, pending: null, channel: null,
  drawn: null, displayFrames: 0, displaySince: 0, fps: 0, seekAsked: undefined,
  static: false,  // a folder of `view --static`: the engine in the page, not a server
  live: null,  // a live session (play, --view): { arrival } of the latest frame, which the server pushes
};

// --- the connection --------------------------------------------------------------------------

/// What the server (or the engine) says: a JSON text message, or a frame batch.
function onMessage(data) {
  try {
    if (typeof data === 'string') onText(JSON.parse(data));
    else onFrames(decodeBatch(data));
  } catch (error) {
    view.pending = null;
    setStatus('error', `a message from the ${view.static ? 'engine' : 'server'} did not decode: ${error.message}`);
  }
}

function connect() {
  if (typeof window.lockstepEngineChannel === 'function') return openStatic();
  const socket = new WebSocket(`ws://${location.host}/ws`);
  socket.binaryType = 'arraybuffer';
  socket.onmessage = (event) => onMessage(event.data);
  socket.onclose = () => {
    if (document.body.dataset.state !== 'ended') setStatus('error', 'the server closed the connection');
  };
  view.channel = { ready: () => socket.readyState === WebSocket.OPEN, send: (buffer) => socket.send(buffer) };
}

// --- a static folder: the person opens a replay, the engine in the page verifies it -------------

function openStatic() {
  view.static = true;
  view.channel = window.lockstepEngineChannel(onMessage);
  $('open').hidden = false;
  $('open-file').onchange = () => { if ($('open-file').files.length) openFile($('open-file').files[0]); };
  document.addEventListener('dragover', (event) => event.preventDefault());
  document.addEventListener('drop', (event) => {
    event.preventDefault();
    if (event.dataTransfer.files.length) openFile(event.dataTransfer.files[0]);
  });
  if (params.has('live')) return followLive(params.get('live'));
  const url = params.get('replay');
  if (url === null) return setStatus('waiting', 'open a replay (.lsr): choose a file or drop one on the page');
  let target;
  try {
    target = new URL(url, location.href);
  } catch (error) {
    return setStatus('error', `?replay=${url} is not a URL`);
  }
  if (target.origin !== location.origin) return setStatus('error', `?replay= loads a replay from this page's own site only, not ${target.origin}`);
  setStatus('loading', `loading ${url}…`);
  const name = target.pathname.split('/').pop() || url;
  fetch(target).then((response) => {
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return readBounded(response, view.channel.maxBytes, name);  // engine.js
  }).then((bytes) => openBytes(name, bytes.buffer))
    .catch((error) => setStatus('error', `cannot load ${url}: ${error.message}`));
}

/// ?live=URL: follows the broadcast in that folder (`host --broadcast DIR` served by this page's
/// server) as `lockstep spectate URL` does; &behind=SECONDS (default 4) and &from=start as its
/// --behind and --from-start.
function followLive(url) {
  let target;
  try {
    target = new URL(url.endsWith('/') ? url : url + '/', location.href);
  } catch (error) {
    return setStatus('error', `?live=${url} is not a URL`);
  }
  if (target.origin !== location.origin) return setStatus('error', `?live= follows a broadcast on this page's own site only, not ${target.origin}`);
  const behind = params.has('behind') ? Number(params.get('behind')) : 4;
  if (!(behind >= 0 && behind <= 3600)) return setStatus('error', `?behind=${params.get('behind')} is not a number of seconds from 0 to 3600`);
  $('open').hidden = true;
  setStatus('loading', `following the broadcast at ${target.href}…`);
  view.channel.follow(target.href, { behind, fromStart: params.get('from') === 'start' });
}

function openFile(file) {
  if (file.size > view.channel.maxBytes) {
    return setStatus('error', `${file.name} is ${file.size} bytes, more than the ${view.channel.maxBytes} this page opens`);
  }
  setStatus('loading', `reading ${file.name}…`);
  file.arrayBuffer().then((bytes) => openBytes(file.name, bytes))
    .catch((error) => setStatus('error', `cannot read ${file.name}: ${error.message}`));
}

function openBytes(name, bytes) {
  view.hello = null;
  view.frames.clear();
  view.pending = null;
  $('verdict').textContent = '';
  delete document.body.dataset.verdict;
  setStatus('verifying', `verifying ${name}: re-simulating every tick…`);
  view.channel.open(name, bytes);
}

/// The engine's verdict: the lines `lockstep replay NAME` prints (its notes, then its last line).
function onVerdict(verdict) {
  const lines = [...verdict.err, ...verdict.out];
  const last = verdict.out.length ? verdict.out[verdict.out.length - 1] : verdict.err[verdict.err.length - 1] || '';
  $('verdict').textContent = lines.join('\n');
  document.body.dataset.verdict = last;
  document.body.dataset.verdictCode = verdict.code;
  document.body.dataset.verifySeconds = verdict.seconds.toFixed(3);
  if (verdict.code === 2) setStatus('error', last);
}

function onText(message) {
  if (message.type === 'hello') return onHello(message);
  if (message.type === 'verdict') return onVerdict(message);
  if (message.type === 'progress') return setStatus('verifying', `${message.label}: tick ${message.done} of ${message.total}`);
  if (message.type === 'status') return onStatus(message);
  if (message.type === 'error') {
    // The request it answers is over: the next move of the playhead asks again.
    view.pending = null;
    return setStatus('error', message.message);
  }
}

function onHello(hello) {
  view.hello = hello;
  view.live = null;  // a replay opened after a broadcast is no longer live
  for (const element of document.querySelectorAll('.live')) element.hidden = hello.mode !== 'live';
  for (const id of ['play', 'back', 'forward', 'speed']) $(id).disabled = hello.mode === 'live';
  view.frames.clear();
  view.drawn = null;
  const base = (path) => path.replace(/\/+$/, '').split('/').pop();
  $('title').textContent = `${hello.mode} · ${hello.files.map(base).join(' vs ')} · ${hello.simulation}`;
  $('title').title = hello.files.join('\n');
  $('range').textContent = `of ${hello.start_tick}–${hello.last_tick}`;
  $('hash-b-label').hidden = $('hash-b').parentElement.hidden = hello.worlds < 2;
  // B, or B to the last world's letter: each overlaid world's hash, in the order the title names them.
  $('hash-b-label').textContent = hello.worlds > 2 ? `hashes B–${String.fromCharCode(64 + hello.worlds)}` : 'hash B';
  $('inputs').innerHTML = '';
  for (let p = 0; p < hello.players; ++p) $('inputs').appendChild(document.createElement('li'));
  showDivergence(hello.divergence);
  if (hello.mode === 'live') {
    view.live = { arrival: performance.now(), end: hello.last_tick };
    view.playing = true;
    $('keys-help').hidden = hello.local_player === null;
    $('local-player').textContent = hello.local_player;
    setStatus('ready', hello.local_player === null ? 'live: watching the session'
                                                   : 'live: the session runs on the server; your keys play');
    return;
  }
  const wanted = Number(params.get('tick'));
  seek(Number.isFinite(wanted) && params.has('tick') ? wanted : hello.start_tick);
  setStatus('ready', hello.drawable ? (view.static ? document.body.dataset.verdict : '')
                                    : 'this simulation has no draw hook: timeline, hashes and inputs only');
}

function showDivergence(divergence) {
  $('divergence').hidden = !divergence;
  if (!divergence) return;
  $('divergence-tick').textContent = divergence.tick;
  $('divergence-note').textContent = divergence.note || '';
  const list = $('divergence-fields');
  list.innerHTML = '';
  for (const field of divergence.fields) {
    const item = document.createElement('li');
    item.textContent = `${field.part ? field.part + ': ' : ''}${field.path} ${field.a} vs ${field.b}`;
    list.appendChild(item);
  }
}

function setStatus(state, text) {
  document.body.dataset.state = state;
  $('status').textContent = text || (state === 'ready' ? 'ready' : state);
}

// --- frames ----------------------------------------------------------------------------------

function decodeBatch(buffer) {
  const data = new DataView(buffer);
  let at = 0;
  const u8 = () => data.getUint8(at++);
  const u16 = () => { const v = data.getUint16(at, true); at += 2; return v; };
  const u32 = () => { const v = data.getUint32(at, true); at += 4; return v; };
  const f32 = () => { const v = data.getFloat32(at, true); at += 4; return v; };
  const u64 = () => { const v = data.getBigUint64(at, true); at += 8; return v; };
  if (u8() !== 1) throw new Error('not a frame batch');
  const worlds = u8(), players = u16(), inputBytes = u16(), count = u32();
  const frames = [];
  for (let f = 0; f < count; ++f) {
    const frame = { tick: Number(u64()), worlds: [] };
    for (let w = 0; w < worlds; ++w) {
      const world = { hash: u64().toString(16).padStart(16, '0'), flags: u8(), inputs: [] };
      for (let p = 0; p < players; ++p) {
        world.inputs.push(new Uint8Array(buffer, at, inputBytes).slice());
        at += inputBytes;
      }
      world.box = [f32(), f32(), f32(), f32()];
      const shapes = u32();
      world.shapes = new Array(shapes);
      for (let s = 0; s < shapes; ++s) {
        world.shapes[s] = { kind: u8(), flags: u8(), player: u16(), a: f32(), b: f32(), c: f32(), d: f32() };
      }
      frame.worlds.push(world);
    }
    frames.push(frame);
  }
  return frames;
}

function onFrames(frames) {
  view.pending = null;
  // Between opening another replay and its hello, a batch still on its way belongs to the old one.
  if (!view.hello) return;
  if (view.live) {
    // Live frames arrive once per tick: the newest is the playhead, blended in from the one before.
    for (const frame of frames) view.frames.set(frame.tick, frame);
    view.tick = frames.length ? frames[frames.length - 1].tick : view.tick;
    view.live.arrival = performance.now();
    view.hello.last_tick = Math.max(view.hello.last_tick, view.tick);
    prune();
    return;
  }
  for (const frame of frames) {
    if (frame.tick >= view.tick - KEEP_BEHIND && frame.tick <= view.tick + 3 * WINDOW) view.frames.set(frame.tick, frame);
  }
  prune();
  requestAhead();
}

function prune() {
  for (const tick of view.frames.keys()) {
    if (tick < view.tick - KEEP_BEHIND || tick > view.tick + 3 * WINDOW) view.frames.delete(tick);
  }
}

/// Asks for the next window of frames when fewer than a window lie ahead (one request at a time).
function requestAhead() {
  if (!view.hello || view.pending || view.live || !view.channel.ready()) return;
  let from = Math.max(view.hello.start_tick, view.tick - 1);
  while (view.frames.has(from) && from <= view.hello.last_tick) ++from;
  if (from > view.hello.last_tick || from > view.tick + WINDOW) return;
  const count = Math.min(WINDOW, view.hello.last_tick - from + 1);
  const message = new DataView(new ArrayBuffer(11));
  message.setUint8(0, 1);
  message.setBigUint64(1, BigInt(from), true);
  message.setUint16(9, count, true);
  view.pending = { from, count };
  view.channel.send(message.buffer);
}

function seek(tick) {
  if (!view.hello || view.live) return;
  tick = Math.max(view.hello.start_tick, Math.min(view.hello.last_tick, Math.round(tick)));
  view.tick = tick;
  view.accumulator = 0;
  prune();
  view.seekAsked = performance.now();
  // An answer still on its way for a window the playhead left is dropped on arrival (onFrames),
  // and the next request starts from here.
  requestAhead();
}

// --- the clock -------------------------------------------------------------------------------

/// Advances the playhead by whole ticks at speed × tick rate, keeping the remainder as alpha:
/// a stall (the next frame not here yet) holds the playhead and caps the accumulator at a tick.
function advance(seconds) {
  const dt = 1 / view.hello.tick_rate_hz;
  view.accumulator += Math.min(seconds, MAX_FRAME_SECONDS) * view.speed;
  while (view.accumulator >= dt) {
    if (view.tick >= view.hello.last_tick) { view.playing = false; view.accumulator = 0; break; }
    if (!view.frames.has(view.tick + 1)) { view.accumulator = dt; break; }
    ++view.tick;
    view.accumulator -= dt;
  }
  prune();
  requestAhead();
}

function onAnimationFrame(time) {
  const seconds = view.lastTime === null ? 0 : (time - view.lastTime) / 1000;
  view.lastTime = time;
  if (view.hello && view.playing && !view.live) advance(seconds);
  draw();
  countDisplayFrames(time);
  requestAnimationFrame(onAnimationFrame);
}

function countDisplayFrames(time) {
  ++view.displayFrames;
  if (time - view.displaySince >= 1000) {
    view.fps = Math.round(view.displayFrames * 1000 / (time - view.displaySince));
    view.displayFrames = 0;
    view.displaySince = time;
    $('fps').textContent = `${view.fps} frames/s at ${view.speed}× of ${view.hello ? view.hello.tick_rate_hz : '?'} ticks/s`;
  }
}

// --- drawing ---------------------------------------------------------------------------------

function draw() {
  const canvas = $('world');
  const context = canvas.getContext('2d');
  const ratio = window.devicePixelRatio || 1;
  const width = Math.round(canvas.clientWidth * ratio), height = Math.round(canvas.clientHeight * ratio);
  if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
  context.setTransform(1, 0, 0, 1, 0, 0);
  context.fillStyle = COLOUR.background;
  context.fillRect(0, 0, width, height);
  const current = view.frames.get(view.tick);
  if (!current) return;
  const previous = view.frames.get(view.tick - 1);
  const dt = view.hello ? 1 / view.hello.tick_rate_hz : 1;
  const elapsed = view.live ? (performance.now() - view.live.arrival) / 1000 : view.accumulator;
  const alpha = view.interpolate && view.playing && previous ? Math.min(1, elapsed / dt) : 1;
  const transform = fit(current.worlds[0], width, height, ratio);
  context.setTransform(transform.scale * ratio, 0, 0, transform.flip * transform.scale * ratio,
                       transform.x * ratio, transform.y * ratio);
  current.worlds.forEach((world, w) => {
    if (world.flags & WORLD_FLAG.absent) return;
    const before = previous && previous.worlds[w];
    drawWorld(context, world, before && before.shapes.length === world.shapes.length ? before : null, alpha, w,
              transform.scale);
  });
  report(current, alpha, transform);
}

/// World units to CSS pixels: the box fitted into the canvas with a margin, centred.
function fit(world, width, height, ratio) {
  const [minX, minY, maxX, maxY] = world.box;
  const w = Math.max(maxX - minX, 1e-9), h = Math.max(maxY - minY, 1e-9);
  const cssWidth = width / ratio, cssHeight = height / ratio, margin = 8;
  const scale = Math.min((cssWidth - 2 * margin) / w, (cssHeight - 2 * margin) / h);
  const flip = world.flags & WORLD_FLAG.yUp ? -1 : 1;
  const x = (cssWidth - scale * w) / 2 - scale * minX;
  const y = flip > 0 ? (cssHeight - scale * h) / 2 - scale * minY : (cssHeight + scale * h) / 2 + scale * minY;
  return { scale, x, y, flip };
}

const mix = (a, b, t) => a + (b - a) * t;

/// Draws one world. The second world of a comparison is drawn only where it differs from the
/// first (as outlines), since everywhere else the two are the same.
function drawWorld(context, world, before, alpha, index, scale) {
  const overlay = index > 0;
  const other = OVERLAY_COLOURS[(index - 1) % OVERLAY_COLOURS.length];
  const pixel = 1 / scale;
  for (let s = 0; s < world.shapes.length; ++s) {
    const shape = world.shapes[s];
    if (overlay && !(shape.flags & 1)) continue;
    const old = before ? before.shapes[s] : shape;
    const a = mix(old.a, shape.a, alpha), b = mix(old.b, shape.b, alpha);
    const c = mix(old.c, shape.c, alpha), d = mix(old.d, shape.d, alpha);
    const differs = (shape.flags & 1) !== 0;
    switch (shape.kind) {
      case SHAPE.wall:
        context.strokeStyle = COLOUR.wall;
        context.lineWidth = 2 * pixel;
        context.strokeRect(a, b, c - a, d - b);
        break;
      case SHAPE.spring: case SHAPE.rope:
        context.strokeStyle = differs ? COLOUR.differs : overlay ? other : shape.kind === SHAPE.spring ? COLOUR.spring : COLOUR.rope;
        context.lineWidth = (shape.kind === SHAPE.rope ? 3 : 1.5) * pixel;
        context.setLineDash(shape.kind === SHAPE.spring ? [4 * pixel, 3 * pixel] : []);
        context.beginPath(); context.moveTo(a, b); context.lineTo(c, d); context.stroke();
        context.setLineDash([]);
        break;
      default: {
        const radius = Math.max(c, 1.5 * pixel);
        const colour = differs ? COLOUR.differs
          : shape.kind === SHAPE.player ? PLAYER_COLOURS[shape.player % PLAYER_COLOURS.length]
          : shape.kind === SHAPE.fixed ? COLOUR.fixed : COLOUR.body;
        context.beginPath();
        context.arc(a, b, radius, 0, 2 * Math.PI);
        if (overlay) {
          context.strokeStyle = differs ? COLOUR.differs : other;
          context.lineWidth = 1.5 * pixel;
          context.stroke();
        } else {
          context.fillStyle = colour;
          context.fill();
        }
        if (differs) {
          context.strokeStyle = COLOUR.differs;
          context.lineWidth = 2 * pixel;
          context.beginPath(); context.arc(a, b, radius + 4 * pixel, 0, 2 * Math.PI); context.stroke();
        }
        if (shape.kind === SHAPE.player && !overlay) drawInput(context, world, shape, a, b, radius, pixel);
      }
    }
  }
}

/// A player's buttons as arrows around its body (the built-in input), or nothing.
function drawInput(context, world, shape, x, y, radius, pixel) {
  const bits = buttonBits(world.inputs[shape.player]);
  if (bits === null) return;
  context.strokeStyle = '#ffffff';
  context.lineWidth = 2 * pixel;
  const reach = radius + 10 * pixel;
  const arrow = (dx, dy) => { context.beginPath(); context.moveTo(x + dx * radius, y + dy * radius);
                              context.lineTo(x + dx * reach, y + dy * reach); context.stroke(); };
  if (bits & 1) arrow(0, -1);
  if (bits & 2) arrow(-1, 0);
  if (bits & 4) arrow(1, 0);
  if (bits & 8) { context.beginPath(); context.arc(x, y, radius + 3 * pixel, 0, 2 * Math.PI); context.stroke(); }
}

function buttonBits(input) {
  if (!input || !view.hello || !view.hello.input_layout.startsWith('u16le buttons')) return null;
  return input[0] | (input[1] << 8);
}

function describeInput(input) {
  const bits = buttonBits(input);
  if (bits === null) return input ? Array.from(input, (b) => b.toString(16).padStart(2, '0')).join(' ') : '';
  const names = [];
  if (bits & 1) names.push('up');
  if (bits & 2) names.push('left');
  if (bits & 4) names.push('right');
  if (bits & 8) names.push('action');
  return names.length ? names.join(' + ') : 'none';
}

/// What was drawn, in the DOM: the tests read it there.
function report(frame, alpha, transform) {
  const world = frame.worlds[0];
  if (view.drawn !== frame.tick) {
    view.drawn = frame.tick;
    $('tick').textContent = frame.tick;
    $('hash').textContent = world.hash;
    $('hash-note').textContent = world.flags & WORLD_FLAG.mismatch ? 'differs from the recorded hash'
      : world.flags & WORLD_FLAG.recorded ? 'as recorded' : '';
    if (frame.worlds.length > 1) {
      $('hash-b').textContent = frame.worlds.slice(1).map((w) => (w.flags & WORLD_FLAG.absent ? '–' : w.hash)).join(' · ');
    }
    const items = $('inputs').children;
    for (let p = 0; p < items.length; ++p) items[p].textContent = describeInput(world.inputs[p]);
    document.body.dataset.drawnTick = frame.tick;
    document.body.dataset.drawnHash = world.hash;
    $('world').dataset.transform = `${transform.scale} ${transform.x} ${transform.y} ${transform.flip}`;
    if (view.seekAsked !== undefined) {
      document.body.dataset.seekMs = Math.round(performance.now() - view.seekAsked);
      view.seekAsked = undefined;
    }
  }
  $('alpha').textContent = alpha.toFixed(2);
  $('play').textContent = view.playing ? 'pause' : 'play';
  drawTimeline();
}

function drawTimeline() {
  const canvas = $('timeline');
  const context = canvas.getContext('2d');
  const width = canvas.clientWidth, height = canvas.clientHeight;
  if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
  const hello = view.hello;
  context.fillStyle = '#181e29';
  context.fillRect(0, 0, width, height);
  if (!hello) return;
  const span = Math.max(1, hello.last_tick - hello.start_tick);
  const x = (tick) => (tick - hello.start_tick) / span * (width - 1);
  context.fillStyle = '#3b5b8c';
  for (const [first, last] of hello.hash_ranges) context.fillRect(x(first), height - 8, Math.max(1, x(last) - x(first)), 8);
  context.fillStyle = '#7fd1b9';
  for (const tick of hello.keyframes) context.fillRect(x(tick) - 1, 0, 2, 10);
  if (hello.truncated) { context.fillStyle = '#ffb74d'; context.fillRect(width - 4, 0, 4, height); }
  if (hello.divergence) { context.fillStyle = '#ff3b3b'; context.fillRect(x(hello.divergence.tick) - 1, 0, 3, height); }
  context.fillStyle = '#ffffff';
  context.fillRect(x(view.tick) - 1, 8, 2, height - 16);
}

// --- controls --------------------------------------------------------------------------------

function wireControls() {
  $('play').onclick = () => { view.playing = !view.playing; view.accumulator = 0; };
  $('back').onclick = () => { view.playing = false; seek(view.tick - 1); };
  $('forward').onclick = () => { view.playing = false; seek(view.tick + 1); };
  $('speed').value = String(view.speed);
  $('speed').onchange = () => { view.speed = Number($('speed').value); };
  $('interpolate').checked = view.interpolate;
  $('interpolate').onchange = () => { view.interpolate = $('interpolate').checked; };
  const timeline = $('timeline');
  const scrub = (event) => {
    if (!view.hello) return;
    const box = timeline.getBoundingClientRect();
    const t = Math.min(1, Math.max(0, (event.clientX - box.left) / box.width));
    seek(view.hello.start_tick + t * (view.hello.last_tick - view.hello.start_tick));
  };
  timeline.onpointerdown = (event) => { timeline.setPointerCapture(event.pointerId); scrub(event); };
  timeline.onpointermove = (event) => { if (event.buttons) scrub(event); };
  document.addEventListener('keydown', (event) => {
    if (view.live) return;
    if (event.key === 'p') $('play').onclick();
    else if (event.key === ',') $('back').onclick();
    else if (event.key === '.') $('forward').onclick();
  });
}

// --- a live session: the keys a person holds, and the session's state --------------------------

const KEYS = { ArrowUp: 1, KeyW: 1, ArrowLeft: 2, KeyA: 2, ArrowRight: 4, KeyD: 4, ArrowDown: 8, KeyS: 8, Space: 16 };
const KEY_NAMES = ['up', 'left', 'right', 'down', 'action'];
const heldCodes = new Set();  // ArrowLeft and KeyA both hold left: releasing one keeps it while the other is down
let held = 0;

/// Sends the keys held whenever they change; the server samples them once per tick.
function setKeys(keys) {
  if (keys === held) return;
  held = keys;
  $('keys-held').textContent = KEY_NAMES.filter((_, bit) => keys & (1 << bit)).join(' + ') || 'none';
  if (view.channel && view.channel.ready() && !view.static) view.channel.send(new Uint8Array([2, keys]).buffer);
}

function onKey(event, down) {
  if (!view.live || KEYS[event.code] === undefined) return;
  event.preventDefault();
  if (down) heldCodes.add(event.code);
  else heldCodes.delete(event.code);
  let keys = 0;
  for (const code of heldCodes) keys |= KEYS[code];
  setKeys(keys);
}

function onStatus(status) {
  $('session').textContent = `tick ${status.tick} of ${(view.live && view.live.end) || '∞'} · ${status.state}` +
    (status.message ? ` · ${status.message}` : '');
  const rtt = status.rtt_ms === null ? 'none (local)' : `${status.rtt_ms} ms`;
  const latency = status.latency_p99_ticks === null || status.latency_p99_ticks === undefined ? '' :
    ` · latency ${status.latency_p50_ticks}/${status.latency_p99_ticks} ticks`;
  const prediction = status.prediction_window ? ` · prediction ${status.prediction_depth}/${status.prediction_window}` : '';
  $('network').textContent = `input delay ${status.input_delay} · rtt ${rtt} · stalls ${status.stalls}${latency}${prediction}`;
  document.body.dataset.sessionTick = status.tick;
  document.body.dataset.sessionHash = status.hash;
  document.body.dataset.keys = status.keys;
  document.body.dataset.keysFromTick = status.keys_from_tick;
  if (['ended', 'failed', 'desync', 'host lost', 'refused'].includes(status.state)) {
    setStatus('ended', status.message || status.state);
  }
}

document.addEventListener('keydown', (event) => onKey(event, true));
document.addEventListener('keyup', (event) => onKey(event, false));
window.addEventListener('blur', () => { heldCodes.clear(); setKeys(0); });

// For tests and the console: move the playhead, and read what was drawn.
window.lockstepView = { seek, state: () => ({ tick: view.tick, drawn: view.drawn, playing: view.playing }) };

wireControls();
connect();
requestAnimationFrame(onAnimationFrame);

// Browser benchmark of the release playground. Reports numbers; it is not a pass/fail test.
// usage: node tests/e2e/bench.mjs [dist dir] (BENCH_ONLY=text runs only the benches whose name has it)
//
// * initial load: navigation start to the first drawn chart, on localhost;
// * slider move to redrawn chart: an `input` event on the microbatches slider until the Gantt
//   canvas has been redrawn with the new result (median and 95th percentile of 30 moves), in
//   wall time, and the main thread's CPU time in the same interval (`cpu`, from the trace's
//   thread clock). On a shared machine the wall time also holds the time the thread waited for
//   a core while other processes ran: their difference is that wait, not work of the page.
//   `handled`: until the page has handled the move (its handler and the effects it queued).
//   When the worker computes, the move costs the page only that, and the result's arrival
//   costs it a second piece of work, `result applied`: from the message to the end of the
//   redraw (the two are what a drag can lose frames to; the wall time between is the worker's);
// * playback of a 400,000-pass schedule: the interval between animation frames while playing
//   (median and 95th percentile over 3 s) and the time each frame spends on the cursor
//   overlay and the numbers at the cursor;
// * each release .wasm's size (the page's module and the worker's engine), raw and gzipped (level 9).

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { launch, serve } from './harness.mjs';

const dist = path.resolve(process.argv[2] ?? 'dist');
const server = await serve(dist);
const browser = await launch();
const results = {};
const only = process.env.BENCH_ONLY ?? '';
/** Runs `fn` and records its result under `name`, unless BENCH_ONLY leaves it out. */
async function bench(name, fn) {
  if (!name.includes(only)) return;
  results[name] = await fn();
}

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: q(0.5), p95: q(0.95), min: s[0], max: s[s.length - 1], n: s.length };
}

/**
 * Navigation start to the first chart: the start of the animation frame that paints it (the
 * page's `data-first-frame`), and, as the benchmark measured it before, when the page next
 * answers a script after the chart (that one also holds whatever tasks the page runs right
 * after the chart: its warm-up, the rest of the page).
 */
async function firstChart(query) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.goto(`${server.url}?${query}`);
  await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0, null, { timeout: 60000 });
  const answered = await page.evaluate(() => performance.now());
  await page.waitForFunction(() => document.querySelector('.chart-wrap')?.hasAttribute('data-first-frame'), null, { timeout: 60000 });
  const frame = Number(await page.locator('.chart-wrap').getAttribute('data-first-frame'));
  await page.close();
  return { frame, answered };
}

/** Moves the microbatches slider between two values and times each redraw. */
async function sliderMoves(query, a, b, moves = 30) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.goto(`${server.url}?${query}`);
  await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0, null, { timeout: 60000 });
  // The main thread's CPU clock at each move's start and end: user-timing marks carry it in a
  // trace (`tts`, microseconds).
  const cdp = await page.context().newCDPSession(page);
  const events = [];
  cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
  const traced = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
  await cdp.send('Tracing.start', { traceConfig: { includedCategories: ['blink.user_timing'] }, transferMode: 'ReportEvents' });
  const samples = await page.evaluate(async ([a, b, moves]) => {
    const wrap = document.querySelector('.chart-wrap');
    const slider = document.querySelector('[data-testid=microbatches-slider]');
    const out = [];
    for (let i = 0; i < moves; i++) {
      const before = Number(wrap.getAttribute('data-redraws'));
      const done = new Promise((resolve) => {
        const obs = new MutationObserver(() => {
          if (Number(wrap.getAttribute('data-redraws')) > before) {
            obs.disconnect();
            const end = performance.now();
            performance.mark(`moved-${i}`);
            resolve(end);
          }
        });
        obs.observe(wrap, { attributes: true });
      });
      performance.mark(`move-${i}`);
      const start = performance.now();
      // When the page has handled the move: its handler and every effect it queued (a task
      // queued now runs after them).
      const idle = new Promise((resolve) => setTimeout(() => resolve(performance.now()), 0));
      slider.value = String(i % 2 ? a : b);
      slider.dispatchEvent(new Event('input', { bubbles: true }));
      const handled = performance.now();
      const end = await done;
      const t = document.querySelector('[data-testid=gantt-canvas]').getAttribute('data-timings').split(' ');
      const engine = (document.documentElement.getAttribute('data-engine') ?? '').split(' ');
      // A worker's result: from its message's arrival to the end of the redraw it caused.
      const applied = engine[0] === 'worker' && engine[4] ? Number(t[6]) - Number(engine[4]) : NaN;
      out.push({ wall: end - start, handled: (await idle) - start, applied });
      (window.__queue ??= []).push([handled - start, Number(t[4]) - start, Number(t[5])]);
      await new Promise((r) => requestAnimationFrame(() => r()));
    }
    return out;
  }, [a, b, moves]);
  await cdp.send('Tracing.end');
  await traced;
  const clock = Object.fromEntries(events.filter((e) => e.cat === 'blink.user_timing' && e.tts !== undefined).map((e) => [e.name, e.tts]));
  const cpu = samples.map((_, i) => (clock[`moved-${i}`] - clock[`move-${i}`]) / 1000).filter((v) => Number.isFinite(v));
  const c = stats(cpu);
  const handled = stats(samples.map((m) => m.handled));
  const applied = samples.map((m) => m.applied).filter((v) => Number.isFinite(v));
  const computed = await page.evaluate(() => [...document.querySelectorAll('.tile-foot')].map((e) => e.textContent).find((t) => t.includes('computed')) ?? '');
  const timings = await page.locator('[data-testid=gantt-canvas]').getAttribute('data-timings');
  const queue = await page.evaluate(() => window.__queue);
  console.log('   [sync handler ms, effect start ms after input, compute-in-effect ms]', JSON.stringify(queue.slice(0, 6)));
  await page.close();
  const [layout, draw, memory, items] = (timings ?? '').split(' ');
  // On the page the move's handling includes the redraw; with the worker it is the request
  // alone, and the result's arrival is a second piece of main-thread work (applied).
  const worker = applied.length ? { 'result applied median': stats(applied).median, 'result applied p95': stats(applied).p95 } : {};
  return { ...stats(samples.map((m) => m.wall)), 'cpu median': c.median, 'cpu p95': c.p95, 'handled p95': handled.p95, ...worker, note: `main-thread CPU per move over ${c.n} moves; ${computed.trim()}; last redraw: layout ${layout} ms, canvas ${draw} ms (${items} items), memory chart ${memory} ms` };
}

/** Plays `query` for three seconds; frame intervals and per-frame overlay work. */
async function playbackFrames(query) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.goto(`${server.url}?${query}&play=1&speed=0.25`);
  await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0, null, { timeout: 60000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=play-button]')?.getAttribute('aria-label') === 'Pause', null, { timeout: 60000 });
  const { intervals, work, passes, moved } = await page.evaluate(async () => {
    const overlay = document.querySelector('[data-testid=gantt-overlay]');
    const scrubber = document.querySelector('[data-testid=time-scrubber]');
    const work = [];
    const obs = new MutationObserver(() => work.push(Number(overlay.getAttribute('data-frame-ms'))));
    obs.observe(overlay, { attributes: true, attributeFilter: ['data-frame-ms'] });
    const intervals = [];
    const t0 = Number(scrubber.value);
    let last = performance.now();
    const start = last;
    await new Promise((resolve) => {
      const frame = (now) => {
        intervals.push(now - last);
        last = now;
        if (now - start < 3000) requestAnimationFrame(frame); else resolve();
      };
      requestAnimationFrame(frame);
    });
    obs.disconnect();
    const c = document.querySelector('[data-testid=gantt-canvas]');
    const passes = ['data-drawn', 'data-merged', 'data-culled'].reduce((n, k) => n + Number(c.getAttribute(k)), 0);
    return { intervals: intervals.slice(1), work, passes, moved: Number(scrubber.value) - t0 };
  });
  await page.close();
  if (!(moved > 0)) throw new Error(`playback did not advance (${moved})`);
  const w = stats(work);
  return { ...stats(intervals), note: `${passes} passes; cursor overlay drawn per frame in: median ${w.median.toFixed(2)} ms, p95 ${w.p95.toFixed(2)} ms over ${w.n} frames` };
}

/**
 * Where computations run: for each query, moves the microbatches slider by one, back and forth,
 * and reads the root element's `data-engine` after each result: the time to compute on the page
 * (workers disabled) against the worker's compute time, its round trip (compute, messages and
 * transfer) and the page's decoding of its result. Medians over `moves` warm moves (the first
 * result, at load, is left out).
 */
async function engineCosts(query, moves = 6) {
  const m = Number(new URLSearchParams(query).get('microbatches'));
  const run = async (disable) => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    if (disable) await page.addInitScript(() => { window.Worker = undefined; });
    await page.goto(`${server.url}?${query}`);
    await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0, null, { timeout: 60000 });
    const out = [];
    for (let i = 0; i < moves; i++) {
      const before = await page.locator('.app').getAttribute('data-computations');
      await page.evaluate((v) => {
        const slider = document.querySelector('[data-testid=microbatches-slider]');
        slider.value = String(v);
        slider.dispatchEvent(new Event('input', { bubbles: true }));
      }, i % 2 ? m : m - 1);
      await page.waitForFunction((b) => document.querySelector('.app').getAttribute('data-computations') !== b, before, { timeout: 60000 });
      out.push((await page.locator('html').getAttribute('data-engine')).split(' '));
    }
    await page.close();
    return out;
  };
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const page = (await run(true)).map((e) => Number(e[1]));
  const worker = await run(false);
  if (worker.some((e) => e[0] !== 'worker')) return { page: median(page), note: 'stays on the page (under the threshold)' };
  return {
    page: median(page),
    worker: median(worker.map((e) => Number(e[1]))),
    'round trip': median(worker.map((e) => Number(e[2]))),
    decode: median(worker.map((e) => Number(e[3]))),
  };
}

for (const [name, query] of [
  ['1f1b 16 devices × 64 microbatches (2,048 passes + baseline)', 'schedule=1f1b&devices=16&microbatches=64'],
  ['zb-h1 32 × 256 (24,576 + 16,384 passes)', 'schedule=zb-h1&devices=32&microbatches=256'],
  ['zb-h1 64 × 256 (49,152 + 32,768 passes)', 'schedule=zb-h1&devices=64&microbatches=256'],
  ['zb-auto 64 × 512 (98,304 + 65,536 passes)', 'schedule=zb-auto&devices=64&microbatches=512'],
  ['interleaved-1f1b 64 × 512, 6 chunks (393,216 + 65,536 passes)', 'schedule=interleaved-1f1b&devices=64&microbatches=512&chunks=6'],
]) {
  await bench(`round trip: ${name}: page vs worker (ms)`, () => engineCosts(query));
}

await bench('initial load to first chart (ms)', async () => {
  const loads = [];
  for (let i = 0; i < 7; i++) loads.push(await firstChart('schedule=1f1b&devices=4&microbatches=8'));
  const answered = stats(loads.map((l) => l.answered));
  return { ...stats(loads.map((l) => l.frame)), note: `the frame that paints it; the page answered a script after it at median ${answered.median.toFixed(1)} ms (p95 ${answered.p95.toFixed(1)})` };
});
await bench('zb-auto P=16 M=64→65: slider to redrawn chart (ms)', () => sliderMoves('schedule=zb-auto&devices=16&microbatches=64', 64, 65));
await bench('zb-auto P=64 M=512→511: slider to redrawn chart (ms)', () => sliderMoves('schedule=zb-auto&devices=64&microbatches=512', 512, 511, 15));
await bench('v-auto P=16 M=20→21 (few microbatches): slider to redrawn chart (ms)', () => sliderMoves('schedule=v-auto&devices=16&microbatches=20', 20, 21, 10));
await bench('v-auto P=32 M=128→127, uneven costs: slider to redrawn chart (ms)', () => sliderMoves('schedule=v-auto&devices=32&microbatches=128&f=10&b=12&w=8', 128, 127, 6));
await bench('1f1b P=4 M=8→9: slider to redrawn chart (ms)', () => sliderMoves('schedule=1f1b&devices=4&microbatches=8', 8, 9));

await bench('1f1b P=4 M=8 (64 passes): playback frame interval (ms)', () => playbackFrames('schedule=1f1b&devices=4&microbatches=8'));
await bench('interleaved-1f1b 64 × 512, 6 chunks (393,216 passes): playback frame interval (ms)', () => playbackFrames('schedule=interleaved-1f1b&devices=64&microbatches=512&chunks=6'));

if (only && !Object.keys(results).length) {
  console.error(`no bench matches BENCH_ONLY=${only}`);
}
// Every module: the page's (named after the page's binary) and the engine's (the worker's).
for (const wasm of fs.readdirSync(dist).filter((f) => f.endsWith('.wasm')).sort()) {
  const bytes = fs.readFileSync(path.join(dist, wasm));
  const role = wasm.startsWith('bubblescope-engine') ? 'engine (worker)' : 'page';
  results[`release .wasm, ${role} (bytes)`] = { raw: bytes.length, gzip9: zlib.gzipSync(bytes, { level: 9 }).length };
}
for (const js of fs.readdirSync(dist).filter((f) => f.endsWith('.js')).sort()) {
  results[`JS glue ${js.replace(/-[0-9a-f]{8,}/, '')} (bytes)`] = { raw: fs.statSync(path.join(dist, js)).size };
}

await browser.close();
await server.close();
const fmt = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(1)) : v);
for (const [name, r] of Object.entries(results)) {
  console.log(`${name.padEnd(56)} ${Object.entries(r).map(([k, v]) => `${k} ${fmt(v)}`).join(' · ')}`);
}
fs.mkdirSync('target', { recursive: true });
fs.writeFileSync('target/browser-bench.json', JSON.stringify(results, null, 2));

// Heavy work runs in the background worker: progress while it computes, only the latest result
// applied, and the page computing on its own when the worker cannot start.

import { assert, assertEq, open, redraws, text } from './harness.mjs';

/** v-auto at unequal costs: the search runs in the worker (past the old 6,144 page limit). */
const HEAVY = 'schedule=v-auto&devices=32&microbatches=512&f=10&b=12&w=8&compare=zb-auto,interleaved-1f1b';
/** Routed to the worker (a slow search), but quick enough to drag through. */
const DRAG = 'schedule=v-auto&devices=32&microbatches=256&f=10&b=12&w=8';

/** Replaces `Worker` before the page's scripts run: `throw` fails at once, `error` on loading. */
async function breakWorkers(page, how) {
  await page.addInitScript((how) => {
    if (how === 'throw') {
      window.Worker = function Worker() { throw new Error('workers are disabled here'); };
      return;
    }
    window.Worker = class extends EventTarget {
      constructor() {
        super();
        setTimeout(() => this.onerror?.(new ErrorEvent('error', { message: 'the script could not load' })), 20);
      }
      postMessage() {}
      terminate() {}
    };
  }, how);
}

const label = (page) => page.locator('[data-testid=gantt-canvas]').getAttribute('aria-label');
const computations = async (page) => Number(await page.locator('.app').getAttribute('data-computations'));

export const tests = {
  async 'a heavy schedule computes in the worker: progress, then the chart'({ page, base, shot }) {
    await page.goto(`${base}?${HEAVY}`);
    await page.waitForSelector('[data-testid=progress]', { timeout: 10000 });
    const progress = await text(page, 'progress');
    assert(/Computing in the background · \d+\.\d s/.test(progress), progress);
    // The page stays responsive: the bar animates and the clock advances while it computes.
    const t0 = Number(progress.match(/(\d+\.\d) s/)[1]);
    await page.waitForFunction((t0) => {
      const t = document.querySelector('[data-testid=progress]')?.textContent.match(/(\d+\.\d) s/);
      return !t || Number(t[1]) > t0;
    }, t0, { timeout: 10000 });
    assertEq(await page.locator('[data-testid=error-message]:not([hidden])').count(), 0, 'no error while waiting');
    assertEq(await page.locator('[data-testid=nothing-note]').count(), 0, 'no "nothing to draw" while waiting');
    await shot('worker-progress');
    await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0, null, { timeout: 60000 });
    await page.waitForSelector('[data-testid=progress]', { state: 'detached' });
    assert((await label(page)).includes('512 microbatches'), await label(page));
    assert((await text(page, 'stat-cost')) !== '—', 'the worker computed the cost');
    assertEq(await page.locator('#microbatches-error:not([hidden])').count(), 0, 'no size refusal');
    assertEq(await page.locator('[data-testid=compare-table] tbody tr').count(), 3, 'main and two compared schedules');
    assert((await page.locator('html').getAttribute('data-engine')).startsWith('worker '), 'computed in the worker');
    await shot('worker-done');
  },

  async 'quick slider drags apply only the last result'({ page, base }) {
    await open(page, base, DRAG);
    assert((await page.locator('html').getAttribute('data-engine')).startsWith('worker '), 'a worker schedule');
    const before = await computations(page);
    const seen = await page.evaluate(async () => {
      const canvas = document.querySelector('[data-testid=gantt-canvas]');
      const labels = [];
      const obs = new MutationObserver(() => labels.push(canvas.getAttribute('aria-label')));
      obs.observe(canvas, { attributes: true, attributeFilter: ['aria-label'] });
      window.__labels = labels;
      const slider = document.querySelector('[data-testid=microbatches-slider]');
      for (const m of [255, 254, 253, 252]) {
        slider.value = String(m);
        slider.dispatchEvent(new Event('input', { bubbles: true }));
        await new Promise((r) => setTimeout(r, 15));
      }
      return labels;
    });
    assertEq(seen.length, 0, 'nothing applied during the drag');
    await page.waitForFunction(() => document.querySelector('[data-testid=gantt-canvas]').getAttribute('aria-label').includes('252 microbatches'), null, { timeout: 30000 });
    await page.waitForSelector('[data-testid=progress]', { state: 'detached' });
    // Give a stale result time to arrive, and check that it never shows.
    await page.waitForTimeout(1500);
    const labels = await page.evaluate(() => window.__labels);
    assert(labels.every((l) => l.includes('252 microbatches')), `a stale chart was shown: ${labels.join(' | ')}`);
    assertEq(await computations(page), before + 1, 'exactly one result applied');
    // The applied numbers are those of 252 microbatches, as a fresh page computes them.
    const cost = await text(page, 'stat-cost');
    await open(page, base, DRAG.replace('microbatches=256', 'microbatches=252'));
    assertEq(await text(page, 'stat-cost'), cost, 'cost at 252 microbatches');
  },

  async 'small schedules stay on the page and the slider redraws without a round trip'({ page, base }) {
    await open(page, base, 'schedule=zb-auto&devices=16&microbatches=64');
    assert((await page.locator('html').getAttribute('data-engine')).startsWith('page '), 'computed on the page');
    const before = await redraws(page);
    await page.locator('[data-testid=microbatches-slider]').fill('65');
    await page.waitForFunction((n) => Number(document.querySelector('.chart-wrap').getAttribute('data-redraws')) > n, before);
    assert((await page.locator('html').getAttribute('data-engine')).startsWith('page '), 'still on the page');
    assertEq(await page.locator('[data-testid=engine-note]').count(), 0, 'no fallback note');
  },

  async 'without workers the page computes on its own and says so'({ page, base }) {
    await breakWorkers(page, 'throw');
    await open(page, base, 'schedule=zb-auto&devices=16&microbatches=64');
    const note = await text(page, 'engine-note');
    assert(note.includes('could not start') && note.includes('workers are disabled here'), note);
    // A schedule the worker would take runs here, under the page's limits.
    await open(page, base, 'schedule=v-auto&devices=16&microbatches=64&f=10&b=12&w=8');
    assert((await page.locator('html').getAttribute('data-engine')).startsWith('page '), 'computed on the page');
    assert((await text(page, 'stat-cost')) !== '—', 'v-auto ran on the page');
    await page.goto(`${base}?schedule=v-auto&devices=32&microbatches=512&f=10&b=12&w=8`);
    await page.waitForSelector('#microbatches-error:not([hidden])');
    const message = await page.locator('#microbatches-error').textContent();
    assert(message.includes('found 32 × 512 = 16384'), message);
  },

  async 'a worker that fails to load hands its waiting request to the page, with the same numbers'({ page, base, context }) {
    const query = 'schedule=v-auto&devices=16&microbatches=64&f=10&b=12&w=8';
    const other = await context.newPage();
    await open(other, base, query);
    assert((await other.locator('html').getAttribute('data-engine')).startsWith('worker '), 'the reference ran in the worker');
    const expected = [await text(other, 'stat-cost'), await text(other, 'stat-bubble-rate'), await text(other, 'stat-peak-memory')];
    await other.close();
    await breakWorkers(page, 'error');
    await open(page, base, query);
    assert((await text(page, 'engine-note')).includes('the script could not load'), 'the note names the failure');
    assert((await page.locator('html').getAttribute('data-engine')).startsWith('page '), 'computed on the page');
    const got = [await text(page, 'stat-cost'), await text(page, 'stat-bubble-rate'), await text(page, 'stat-peak-memory')];
    assertEq(got.join(' '), expected.join(' '), 'page and worker agree');
  },
};

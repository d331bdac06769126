// Errors: clear messages next to the control that causes them; the last good chart stays;
// nothing panics or freezes.

import { assert, assertEq, canvasDigest as digest, open, redraws, setValue, text, waitForRedraw } from './harness.mjs';

export const tests = {
  async 'dualpipe with odd devices says so at the devices control and keeps the chart'({ page, base, shot }) {
    await open(page, base, 'schedule=dualpipe&devices=4&microbatches=8');
    const good = await digest(page);
    const cost = await text(page, 'stat-cost');
    await setValue(page, 'devices-input', 5);
    await page.waitForSelector('#devices-error:not([hidden])');
    const message = (await page.locator('#devices-error').textContent()).trim();
    assert(message.startsWith('dualpipe needs an even number of devices, found 5'), message);
    assert(message.includes('hint:'), `no hint: ${message}`);
    assertEq(await digest(page), good, 'the last good chart stays');
    assert((await page.locator('.stale-note').count()) === 1, 'the stale note is shown');
    assertEq(await text(page, 'stat-cost'), '—', 'no numbers for invalid settings');
    const banner = await page.locator('.banner.error[data-testid=error-message]').textContent();
    assert(banner.includes('see devices'), banner);
    await shot('error-dualpipe-odd');
    // Fixing it brings everything back (6 devices would need 12 microbatches: 2 fit 8).
    const before = await redraws(page);
    await setValue(page, 'devices-input', 2);
    await waitForRedraw(page, before);
    assert((await page.locator('#devices-error').getAttribute('hidden')) !== null, 'the error went away');
    assert((await text(page, 'stat-cost')) !== cost, 'new numbers');
  },

  async 'an out-of-range number in a box is explained, not applied'({ page, base }) {
    await open(page, base);
    await setValue(page, 'f-input', '-3');
    await page.waitForSelector('#f-error:not([hidden])');
    assertEq((await page.locator('#f-error').textContent()).trim(), 'expected a number ≥ 0, found `-3`', 'message');
    assertEq(await text(page, 'stat-cost'), '33', 'the settings did not change');
    await setValue(page, 'devices-input', '2.5');
    await page.waitForSelector('#devices-error:not([hidden])');
    assertEq((await page.locator('#devices-error').textContent()).trim(), 'expected a whole number ≥ 1, found `2.5`', 'message');
  },

  async 'sizes it cannot draw quickly are refused with a message'({ page, base }) {
    await open(page, base, 'schedule=interleaved-1f1b&devices=64&microbatches=256&chunks=2');
    const started = Date.now();
    await setValue(page, 'microbatches-input', 512);
    await setValue(page, 'chunks-input', 24);  // 64 × 512 × 24 chunks × (F, BW) = 1572864 passes
    await page.waitForSelector('#microbatches-error:not([hidden])');
    const message = await page.locator('#microbatches-error').textContent();
    assert(message.includes('more than the 1500000 the playground draws live'), message);
    assert(Date.now() - started < 5000, 'the refusal took too long');
    await setValue(page, 'devices-input', 200);
    await page.waitForSelector('#devices-error:not([hidden])');
    assert((await page.locator('#devices-error').textContent()).includes('up to 64 devices'), 'devices cap');
  },

  async 'a search too slow for the page runs in the background, and without a worker it is refused'({ page, base, context }) {
    await open(page, base, 'schedule=v-auto&devices=32&microbatches=192&f=10&b=12&w=8');
    const cost = await text(page, 'stat-cost');
    assert(cost !== '—', 'v-auto runs at 32 × 192');
    // Past the page's live limit (32 × 192 = 6144) the worker runs the search.
    await setValue(page, 'microbatches-input', 512);
    await page.waitForFunction(() => document.querySelector('[data-testid=gantt-canvas]').getAttribute('aria-label').includes('512 microbatches'), null, { timeout: 60000 });
    assert((await text(page, 'stat-cost')) !== cost, 'a new cost at 32 × 512');
    assertEq(await page.locator('#microbatches-error:not([hidden])').count(), 0, 'no refusal with the worker');
    // Without a worker the page keeps its limit, with the message and hints.
    const alone = await context.newPage();
    await alone.addInitScript(() => { window.Worker = undefined; });
    await alone.goto(`${base}?schedule=v-auto&devices=32&microbatches=192&f=10&b=12&w=8`);
    await alone.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0);
    const started = Date.now();
    await setValue(alone, 'microbatches-input', 512);
    await alone.waitForSelector('#microbatches-error:not([hidden])');
    const message = await alone.locator('#microbatches-error').textContent();
    assert(message.includes('found 32 × 512 = 16384'), message);
    assertEq(await alone.locator('.stale-note').textContent(), 'Showing the last valid schedule — fix the highlighted setting to update.', 'note');
    assert(message.includes('hint:') && message.includes('bubblescope simulate -s v-auto -p 32 -m 512'), message);
    assert(Date.now() - started < 3000, 'the refusal took too long');
    // With F = B = W the search stops early: the same size runs.
    const again = Number(await alone.locator('.chart-wrap').getAttribute('data-redraws'));
    await setValue(alone, 'w-input', 10);
    await setValue(alone, 'b-input', 10);
    await alone.waitForFunction((n) => Number(document.querySelector('.chart-wrap').getAttribute('data-redraws')) > n, again);
    await alone.waitForSelector('#microbatches-error[hidden]', { state: 'attached' });
    assert((await text(alone, 'stat-cost')) !== '—', 'v-auto runs at equal costs');
    // Opened straight from a link, there is no last valid schedule to show.
    await alone.goto(`${base}?schedule=v-auto&devices=32&microbatches=512&f=10&b=12&w=8`);
    await alone.waitForSelector('[data-testid=nothing-note]');
    assertEq(await alone.locator('.stale-note').count(), 1, 'one note');
    await alone.close();
  },

  async 'a memory limit below what the family needs is reported'({ page, base }) {
    await open(page, base, 'schedule=zb-auto&devices=4&microbatches=8');
    await setValue(page, 'mem-limit-input', 0.5);
    await page.waitForSelector('#mem-limit-error:not([hidden])');
    const message = await page.locator('#mem-limit-error').textContent();
    assert(message.startsWith('cannot fit memory: '), message);
  },

  async 'a limit under a fixed schedule\'s peak is flagged, not hidden'({ page, base }) {
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&mem-limit=3');
    const tile = await page.locator('.tile.alert').textContent();
    assert(tile.includes('above the limit 3 on device 0'), tile);
    const row = await page.locator('[data-testid=device-table] tr.over').count();
    assertEq(row, 1, 'one device over the limit');
  },
};

// The first chart, live stats and sliders.

import { assert, assertEq, inkRatio, open, redraws, setValue, text, waitForRedraw } from './harness.mjs';

export const tests = {
  async 'loads with a drawn chart and the 1F1B numbers'({ page, base, shot }) {
    await open(page, base);
    assertEq(await text(page, 'stat-cost'), '33', 'cost for 1F1B P=4 M=8');
    assertEq(await text(page, 'stat-bubble-rate'), '0.2727', 'bubble rate');
    assertEq(await text(page, 'stat-peak-memory'), '4', 'peak memory');
    const ink = await inkRatio(page);
    assert(ink > 0.08, `the Gantt canvas looks empty (ink ${ink})`);
    const memInk = await inkRatio(page, 'memory-chart');
    assert(memInk > 0.05, `the memory chart looks empty (ink ${memInk})`);
    const dims = await page.evaluate(() => {
      const c = document.querySelector('[data-testid=gantt-canvas]');
      return { w: c.width, cssW: c.getBoundingClientRect().width, dpr: window.devicePixelRatio };
    });
    assert(Math.abs(dims.w - dims.cssW * dims.dpr) <= 2, `canvas backing store ${dims.w} is not CSS width × DPR (${dims.cssW} × ${dims.dpr})`);
    await shot('main-1f1b');
  },

  async 'moving the devices slider updates stats and redraws'({ page, base }) {
    await open(page, base);
    const before = await redraws(page);
    await setValue(page, 'devices-slider', 8);
    await waitForRedraw(page, before);
    assertEq(await text(page, 'stat-cost'), '45', 'cost for 1F1B P=8 M=8: (M+P−1)(F+B+W)');
    assertEq(await text(page, 'stat-peak-memory'), '8', 'peak memory P=8');
    assertEq(await page.locator('[data-testid=devices-input]').inputValue(), '8', 'the number box follows the slider');
    const drawn = Number(await page.locator('[data-testid=gantt-canvas]').getAttribute('data-drawn'));
    assertEq(drawn, 8 * 8 * 2, 'every pass drawn');
  },

  async 'the canvas backing store follows a device pixel ratio of 2'({ browser, base, shots }) {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, deviceScaleFactor: 2 });
    try {
      const page = await context.newPage();
      await open(page, base);
      const dims = await page.evaluate(() => {
        const c = document.querySelector('[data-testid=gantt-canvas]');
        return { w: c.width, h: c.height, cssW: c.getBoundingClientRect().width, cssH: c.getBoundingClientRect().height };
      });
      assert(Math.abs(dims.w - 2 * dims.cssW) <= 2 && Math.abs(dims.h - 2 * dims.cssH) <= 2,
        `backing store ${dims.w}×${dims.h} is not twice the CSS size ${dims.cssW}×${dims.cssH}`);
      await page.screenshot({ path: `${shots}/main-dpr2.png` });
    } finally {
      await context.close();
    }
  },
};

// ?embed=1: only the chart (stats with stats=1), sized to its iframe.

import http from 'node:http';
import { assert, assertEq, inkRatio } from './harness.mjs';

export const tests = {
  async 'embed mode shows only the chart, sized to the iframe'({ page, base, shots }) {
    // A host page on another origin embedding the playground.
    const src = `${base}?schedule=zb-v&devices=4&microbatches=8&embed=1&stats=1`;
    const host = http.createServer((_, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><body style="margin:20px;font-family:sans-serif"><h1>My lecture notes</h1>
        <iframe id="f" src="${src}" width="640" height="520" style="border:1px solid #ccc"></iframe></body>`);
    });
    await new Promise((r) => host.listen(0, '127.0.0.1', r));
    try {
      await page.goto(`http://127.0.0.1:${host.address().port}/`);
      const frame = page.frameLocator('#f');
      await frame.locator('[data-testid=gantt-canvas]').waitFor();
      const inner = page.frames().find((f) => f.url().startsWith(base));
      await inner.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0);
      assertEq(await frame.locator('.sidebar').count(), 0, 'no sidebar in embed mode');
      assertEq(await frame.locator('.header').count(), 0, 'no header in embed mode');
      // ZB-V at unit costs: each chunk runs at half, zero bubble: cost = M·(F+B+W) = 24.
      assertEq((await frame.locator('[data-testid=stat-cost]').textContent()).trim(), '24', 'stats=1 shows the numbers');
      const width = await inner.evaluate(() => document.querySelector('[data-testid=gantt-canvas]').getBoundingClientRect().width);
      assert(width > 500 && width <= 640, `canvas width ${width} does not fit the 640px iframe`);
      const ink = await inkRatio(inner);
      assert(ink > 0.08, `embedded chart looks empty (${ink})`);
      await page.screenshot({ path: `${shots}/embed.png` });
    } finally {
      host.close();
    }
  },
};

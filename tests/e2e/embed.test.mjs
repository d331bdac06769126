// ?embed=1: only the chart (stats with stats=1), sized to its iframe.

import http from 'node:http';
import { assert, assertEq, inkRatio, open } from './harness.mjs';

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

  async 'an embed fits its frame: the chart first, the numbers on one line, nothing clipped'({ browser, base, shots }) {
    const cases = [
      [600, 400, 4, 8],
      [360, 640, 4, 8],
      [600, 480, 4, 8],
      // Sixteen rows at full height need 384 px: in a 400 px frame they shrink to fit.
      [600, 400, 16, 32],
      // With the memory chart too.
      [600, 480, 4, 8, '&memory=1'],
    ];
    for (const [width, height, devices, microbatches, extra = ''] of cases) {
      const context = await browser.newContext({ viewport: { width, height } });
      const page = await context.newPage();
      await open(page, base, `schedule=zb-v&devices=${devices}&microbatches=${microbatches}&embed=1&stats=1${extra}`);
      const at = `${width} × ${height}, ${devices} devices${extra}`;
      const m = await page.evaluate(() => {
        const box = (sel) => document.querySelector(sel)?.getBoundingClientRect().toJSON();
        const shown = (sel) => [...document.querySelectorAll(sel)].filter((e) => e.getClientRects().length > 0).length;
        return {
          scrollHeight: document.documentElement.scrollHeight,
          scrollWidth: document.documentElement.scrollWidth,
          chart: box('[data-testid=gantt-canvas]'),
          tiles: box('.tiles'),
          costBox: box('[data-testid=stat-cost]'),
          playback: box('[data-testid=playback]'),
          credit: box('.embed-credit'),
          toolbars: shown('.toolbar'),
          cost: document.querySelector('[data-testid=stat-cost]')?.textContent.trim(),
        };
      });
      assert(m.scrollHeight <= height, `${at}: the page is ${m.scrollHeight} px tall, clipped below ${height}`);
      assert(m.scrollWidth <= width, `${at}: the page is ${m.scrollWidth} px wide`);
      assert(m.playback.bottom <= height && m.credit.bottom <= height, `${at}: the playback bar or credit is cut off`);
      assert(m.chart.top < m.tiles.top, `${at}: the chart comes first`);
      // One line: the cost is inside the line's box, not wrapped out of view below it.
      assert(m.costBox.top >= m.tiles.top && m.costBox.bottom <= m.tiles.bottom + 1, `${at}: the cost is not on the one line of numbers`);
      assertEq(m.toolbars, 0, `${at}: no toolbar in an embed`);
      assertEq(m.cost, devices === 4 ? '24' : '96', `${at}: the cost is shown`);
      await page.screenshot({ path: `${shots}/embed-${width}x${height}-p${devices}${extra ? '-memory' : ''}.png` });
      await context.close();
    }
  },

  async 'the embed snippet asks for a frame that holds the chart'({ browser, base }) {
    for (const [devices, microbatches] of [[4, 8], [16, 32]]) {
      const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
      const page = await context.newPage();
      await open(page, base, `schedule=zb-v&devices=${devices}&microbatches=${microbatches}`);
      await page.locator('[data-testid=export-menu]').click();
      const snippet = await page.locator('[data-testid=embed-snippet]').inputValue();
      const src = snippet.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
      const height = Number(snippet.match(/height="(\d+)"/)[1]);
      assert(height >= 320 && height <= 720, `frame height ${height}`);
      // The frame as the snippet sets it, 600 px wide: everything fits without scrolling.
      await page.setViewportSize({ width: 600, height });
      await page.goto(new URL(src, base).href);
      await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0);
      const scroll = await page.evaluate(() => document.documentElement.scrollHeight);
      assert(scroll <= height, `${devices} devices: the snippet's ${height} px frame scrolls to ${scroll}`);
      await context.close();
    }
  },
};

// Bubble attribution: the bar under the stats, the "Bubble causes" shading and its hover text.

import fs from 'node:fs';
import { assert, assertEq, assertNear, canvasDigest, cli, open, redraws, waitForRedraw } from './harness.mjs';

// 1F1B with communication and a heavier backward. (Unequal stages need per-device cost lists,
// which the link does not carry yet; the CLI's golden figure covers imbalance.)
const QUERY = 'schedule=1f1b&devices=4&microbatches=8&b=2&comm=0.3';
const FLAGS = ['-s', '1f1b', '-p', '4', '-m', '8', '--b', '2', '--comm', '0.3'];

const computations = (page) => page.evaluate(() => Number(document.querySelector('.app').getAttribute('data-computations')));
const value = async (page, id) => Number(await page.locator(`[data-testid=${id}]`).getAttribute('data-value'));

/** Moves the pointer along `device`'s row until the tooltip describes an idle gap. */
async function hoverGap(page, device, fromShare, toShare) {
  const box = await page.locator('[data-testid=gantt-canvas]').boundingBox();
  // Rows start below the legend (36 px) and the panel title (24 px), 24 px high, 4 px apart.
  const y = box.y + 60 + device * 28 + 12;
  for (let x = box.x + box.width * fromShare; x < box.x + box.width * toShare; x += 3) {
    await page.mouse.move(x, y);
    const tip = page.locator('[data-testid=tooltip]');
    if (await tip.count() && (await tip.textContent()).startsWith('idle')) return (await tip.textContent()).trim();
  }
  throw new Error(`no idle gap found on device ${device}`);
}

export const tests = {
  async 'the attribution bar shows what simulate --json attributes'({ page, base }) {
    await open(page, base, QUERY);
    await page.waitForSelector('[data-testid=attribution-bar]', { timeout: 5000 });
    const json = JSON.parse(cli(['simulate', ...FLAGS, '--json']));
    for (const cause of ['communication', 'imbalance', 'schedule']) {
      assertNear(await value(page, `attribution-${cause}`), json.attribution[cause], `${cause} part`);
    }
    assertNear(await value(page, 'attribution-total'), json.cost - json.ideal, 'cost − ideal');
    const label = await page.locator('[data-testid=attribution-communication]').textContent();
    assert(/communication\s+\d/.test(label), `the label names the cause and its value: ${label}`);
    // The bar's segments are as wide as their shares of the positive parts.
    const widths = await page.locator('.attr-seg').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().width));
    const bar = await page.locator('.attr-bar').evaluate((e) => e.clientWidth);
    assert(Math.abs(widths.reduce((a, b) => a + b, 0) - bar) < 2, `segments ${widths} fill the bar ${bar}`);
  },

  async 'the causes toggle shades idle gaps without recomputing, and hovering a gap names what it waited for'({ page, base, shot }) {
    await open(page, base, QUERY);
    const plain = await canvasDigest(page);
    const before = await computations(page);
    const drawn = await redraws(page);
    await page.locator('[data-testid=causes-toggle]').check();
    await waitForRedraw(page, drawn);
    assert(await canvasDigest(page) !== plain, 'the chart did not change when gaps were shaded');
    assertEq(await computations(page), before, 'a view preference re-ran the schedules');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('causes') === '1');
    // Device 3 waits for F0 from device 2 first: 3 forwards and 3 hops of 0.3.
    const tip = await hoverGap(page, 3, 0.06, 0.2);
    assert(tip.includes('idle 3.9 before F0 on device 3'), `tooltip: ${tip}`);
    assert(tip.includes('waited for F0 on device 2 (0.3 communication)'), `tooltip: ${tip}`);
    assert(tip.includes('schedule 3 · imbalance 0 · communication 0.9'), `tooltip: ${tip}`);
    await shot('causes-1f1b-comm');
    // Off again: the plain chart, byte for byte.
    const again = await redraws(page);
    await page.locator('[data-testid=causes-toggle]').uncheck();
    await waitForRedraw(page, again);
    assertEq(await canvasDigest(page), plain, 'turning the shading off restores the plain chart');
  },

  async 'causes=1 in the link shades the gaps from the start'({ page, base, shots }) {
    await open(page, base, `${QUERY}&causes=1`);
    assert(await page.locator('[data-testid=causes-toggle]').isChecked(), 'the toggle follows the link');
    // The causes follow the first chart from the engine (the bar shows once they are here).
    await page.waitForSelector('[data-testid=attribution-bar]', { timeout: 15000 });
    const tip = await hoverGap(page, 0, 0.2, 0.5);
    assert(/waited for BW?\d+ on device 1 \(0\.3 communication\)/.test(tip), `device 0 waits for backwards from device 1: ${tip}`);
    await page.locator('.chart-card').screenshot({ path: `${shots}/causes-chart.png` });
  },

  async 'with causes on, the SVG export equals render --causes'({ page, base }) {
    await open(page, base, `${QUERY}&compare=zb-h1&causes=1`);
    // The causes arrive after the chart, with the split by cause.
    await page.waitForSelector('[data-testid=attribution-bar]', { timeout: 10000 });
    await page.locator('[data-testid=export-menu]').click();
    const [file] = await Promise.all([page.waitForEvent('download'), page.locator('[data-testid=export-svg]').click()]);
    const svg = fs.readFileSync(await file.path(), 'utf8');
    const expected = cli(['render', '--compare', '1f1b,zb-h1', ...FLAGS.slice(2), '--causes', '-o', '-']);
    assert(svg === expected, `the app's SVG (${svg.length} bytes) differs from render --causes (${expected.length} bytes)`);
    assert(svg.includes('idle by cause'), 'the export has the causes legend');
  },
};

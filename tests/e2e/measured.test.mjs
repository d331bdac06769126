// Measured runs: the per-rank profiler traces of a real PyTorch run, opened together, drawn
// with the plan's prediction beside them, and planned again at the fitted costs.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assert, assertEq, cli, open, redraws, text, waitForRedraw } from './harness.mjs';

const run = path.resolve('tests/fixtures/traces/interleaved-zb');

function rankFiles() {
  return ['rank0.pt.trace.json.gz', 'rank1.pt.trace.json.gz'].map((name) => ({
    name,
    mimeType: 'application/gzip',
    buffer: fs.readFileSync(path.join(run, name)),
  }));
}

export const tests = {
  async 'the rank files of a run open as the measured run and its prediction'({ page, base, shot }) {
    await open(page, base);
    const before = await redraws(page);
    await page.locator('[data-testid=import-file]').setInputFiles(rankFiles());
    await page.waitForSelector('[data-testid=measured-run]');
    await waitForRedraw(page, before);
    const expected = JSON.parse(cli(['trace', run, '--json']));
    const step = await text(page, 'measured-step');
    const ms = (expected.step_time / 1000).toFixed(2).replace(/0+$/, '').replace(/\.$/, '');
    assert(step.includes(`${ms} ms`), `step ${step} like the CLI's ${expected.step_time} µs`);
    const prediction = await text(page, 'measured-prediction');
    assert(prediction.startsWith('predicted ') && prediction.includes('% of the measured step'), prediction);
    assertEq(await page.locator('[data-testid=fitted-costs] tbody tr').count(), expected.stages, 'one row per stage');
    // The headline tiles say they are measured, with the prediction at the fitted costs below.
    assertEq(await page.locator('[data-testid=stat-measured]').count(), 2, 'cost and bubble tiles badged');
    // The prediction's cost is the same orders at the fitted costs, as the CLI plans them.
    const csv = path.join(os.tmpdir(), `bubblescope-e2e-${process.pid}.csv`);
    cli(['convert', run, csv]);
    const planned = JSON.parse(cli(['simulate', '--from', csv, '--costs-from', run, '--json']));
    fs.rmSync(csv, { force: true });
    const cost = await text(page, 'stat-cost-predicted');
    const plannedMs = (planned.cost / 1000).toFixed(2).replace(/0+$/, '').replace(/\.$/, '');
    assert(cost.includes(`predicted ${plannedMs} ms`), `${cost} like the CLI's ${planned.cost} µs`);
    // The chart stacks the run and the same orders at the fitted costs, in µs.
    const chart = await page.locator('[data-testid=gantt-canvas]').getAttribute('data-panels');
    assert(chart.includes('measured run'), 'the run is labelled measured');
    assert(chart.includes('predicted: the same orders at the fitted costs'), 'the prediction is drawn beside it');
    await shot('measured-run');
  },

  async 'planning with the fitted costs compares every family on the run'({ page, base }) {
    await open(page, base);
    const before = await redraws(page);
    await page.locator('[data-testid=import-file]').setInputFiles(rankFiles());
    await page.waitForSelector('[data-testid=measured-run]');
    await waitForRedraw(page, before);
    await page.locator('[data-testid=use-fitted-costs]').click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('devices') === '2');
    const url = new URL(page.url());
    assert(url.searchParams.get('microbatches') === '4', url.search);
    assert(Number(url.searchParams.get('f')?.split(',')[0]) > 1000, `F in µs: ${url.search}`);
  },

  async 'a broken trace names the file and gives a hint'({ page, base }) {
    await open(page, base);
    const files = rankFiles();
    files[1].buffer = files[1].buffer.subarray(0, 2000);
    await page.locator('[data-testid=import-file]').setInputFiles(files);
    const error = page.locator('.panel:has([data-testid=import-file]) [data-testid=error-message]');
    await error.waitFor();
    const message = await error.innerText();
    assert(message.includes('rank1.pt.trace.json.gz') && message.includes('hint:'), message);
  },

  // Issue 43 item 15: the card's per-device table shows every figure whole, and a measured
  // run has no speedup over 1F1B (its costs are the run's own, no 1F1B ran on them).
  async 'the measured card shows every figure whole and no speedup over 1F1B'({ page, base }) {
    await open(page, base);
    assertEq(await page.locator('[data-testid=stat-speedup]').count(), 1, 'a generated schedule has its speedup');
    const before = await redraws(page);
    await page.locator('[data-testid=import-file]').setInputFiles(rankFiles());
    await page.waitForSelector('[data-testid=measured-run]');
    await waitForRedraw(page, before);
    const cut = await page.evaluate(() => [...document.querySelectorAll('[data-testid=measured-split] th, [data-testid=measured-split] td')]
      .filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.textContent));
    assertEq(JSON.stringify(cut), '[]', 'no cell of the per-device table is cut');
    const table = page.locator('[data-testid=measured-split]');
    const box = await table.boundingBox();
    const card = await page.locator('[data-testid=measured-run]').boundingBox();
    assert(box.x + box.width <= card.x + card.width + 1, 'the table fits its card');
    const expected = JSON.parse(cli(['trace', run, '--json']));
    const rows = await page.locator('[data-testid=measured-split] tbody tr').allTextContents();
    assertEq(rows.length, expected.per_device.length, 'one row per device');
    const head = await page.locator('[data-testid=measured-split] caption').textContent();
    const unit = head.includes('ms') ? 1000 : 1;
    expected.per_device.forEach((d, i) => {
      const shown = (d.compute / unit).toFixed(2).replace(/0+$/, '').replace(/\.$/, '');
      assert(rows[i].includes(shown), `device ${d.device}'s compute ${shown} in ${rows[i]}`);
    });
    assertEq(await page.locator('[data-testid=stat-speedup]').count(), 0, 'no speedup over 1F1B on a measured run');
    const stats = await page.locator('section.tiles').first().textContent();
    assert(!stats.includes('over 1F1B'), `no speedup tile: ${stats}`);
  },
};

// Every control changes the chart and the stats, and the stats are the CLI's numbers.

import { assert, assertEq, canvasDigest as digest, change, cli, open, redraws, text, waitForRedraw } from './harness.mjs';

async function stats(page) {
  return {
    cost: await text(page, 'stat-cost'),
    bubble: await text(page, 'stat-bubble-rate'),
    peak: await text(page, 'stat-peak-memory'),
  };
}

/** The CLI's numbers for the same settings, formatted as the app shows them. */
function cliStats(args) {
  const j = JSON.parse(cli(['simulate', '--json', ...args]));
  const fmt = (v) => (Number.isInteger(v) ? String(v) : String(Number(v.toFixed(4))));
  return { cost: fmt(j.cost), bubble: fmt(j.bubble_rate), peak: fmt(j.peak_memory) };
}

async function pick(page, name) {
  const before = await redraws(page);
  await page.locator('[data-testid=schedule-select]').selectOption(name);
  await waitForRedraw(page, before);
}

export const tests = {
  async 'every control changes the chart and the stats'({ page, base, shot }) {
    // [schedule, control, value, which stats must change]
    const cases = [
      ['1f1b', 'microbatches-input', 12, ['cost']],
      ['1f1b', 'f-input', 2, ['cost']],
      ['1f1b', 'b-input', 3, ['cost']],
      ['1f1b', 'w-input', 0.5, ['cost']],
      ['1f1b', 'comm-input', 1, ['cost']],
      ['1f1b', 'mem-f-input', 3, ['peak']],
      ['zb-h1', 'mem-w-input', 1, []],  // device 0 peaks at P·mem-f whatever mem-w; the others move
      ['zb-auto', 'mem-limit-input', 4, ['cost']],
      ['interleaved-1f1b', 'chunks-input', 3, ['cost']],
      ['interleaved-1f1b', 'group-input', 8, ['peak']],  // the bubble is (P−1)(F+B+W)/V for any group; memory is not
      ['hanayo', 'waves-input', 1, ['cost']],
      ['seq1f1b', 'seq-splits-input', 4, ['cost']],
      ['dualpipe', 'overlap-input', 2, ['cost']],
      ['1f1b', 'devices-input', 6, ['cost', 'peak']],
    ];
    for (const [schedule, control, value, changes] of cases) {
      await open(page, base, `schedule=${schedule}&devices=4&microbatches=8`);
      // Memory settings show in the memory chart; everything else moves the Gantt chart.
      const chart = changes.includes('cost') ? 'gantt-canvas' : 'memory-chart';
      const deviceTable = await page.locator('[data-testid=device-table]').textContent();
      const beforeStats = await stats(page);
      const beforePixels = await digest(page, chart);
      await change(page, control, value);
      const afterStats = await stats(page);
      for (const key of changes) {
        assert(afterStats[key] !== beforeStats[key], `${schedule}: ${control}=${value} left ${key} at ${afterStats[key]}`);
      }
      assert((await digest(page, chart)) !== beforePixels, `${schedule}: ${control}=${value} did not redraw ${chart}`);
      assert((await page.locator('[data-testid=device-table]').textContent()) !== deviceTable, `${schedule}: ${control}=${value} left the per-device table as it was`);
    }
    await shot('controls-last');
  },

  async 'picking a family shows only its options and its description'({ page, base }) {
    await open(page, base);
    assertEq(await page.locator('[data-testid=chunks-input]').count(), 0, 'chunks hidden for 1F1B');
    await pick(page, 'interleaved-1f1b');
    assertEq(await page.locator('[data-testid=chunks-input]').count(), 1, 'chunks shown for interleaved');
    assertEq(await page.locator('[data-testid=group-input]').count(), 1, 'group shown for interleaved');
    const summary = await text(page, 'family-summary');
    assert(summary.includes('virtual pipeline'), `summary: ${summary}`);
    await pick(page, 'dualpipe');
    assertEq(await page.locator('[data-testid=overlap-input]').count(), 1, 'overlap shown for DualPipe');
    assertEq(await page.locator('[data-testid=chunks-input]').count(), 0, 'chunks hidden again');
  },

  async 'stats show the numbers the CLI prints'({ page, base }) {
    const settings = [
      ['zb-h1', '4', '8', []],
      ['zb-2p', '8', '24', ['--f', '18522', '--b', '18086', '--w', '9337', '--comm', '601', '--mem-f', '201216', '--mem-w', '73728']],
      ['zb-v', '4', '8', ['--f', '10', '--b', '12', '--w', '8']],
      ['interleaved-1f1b', '4', '12', ['--chunks', '2']],
      ['dualpipe', '8', '20', ['--overlap', '3']],
    ];
    for (const [schedule, devices, mbs, extra] of settings) {
      const query = [`schedule=${schedule}`, `devices=${devices}`, `microbatches=${mbs}`];
      for (let i = 0; i < extra.length; i += 2) query.push(`${extra[i].slice(2)}=${extra[i + 1]}`);
      await open(page, base, query.join('&'));
      const expected = cliStats(['--schedule', schedule, '--devices', devices, '--microbatches', mbs, ...extra]);
      const shown = await stats(page);
      assertEq(JSON.stringify(shown), JSON.stringify(expected), `${schedule} stats vs CLI`);
    }
  },

  async 'presets reproduce published setups'({ page, base, shot }) {
    await open(page, base);
    const before = await redraws(page);
    await page.locator('[data-testid=preset-select]').selectOption('zb-1.5b');
    await waitForRedraw(page, before);
    // Zero Bubble paper, Table 5, first row: ZB-2p 0.0433, and 1F1B 0.2431 in the comparison.
    assertEq(await text(page, 'stat-bubble-rate'), '0.0433', 'ZB-2p bubble rate of the 1.5B model');
    const table = await page.locator('[data-testid=compare-table]').textContent();
    assert(table.includes('0.2431'), `the comparison lacks 1F1B's 0.2431: ${table}`);
    // Memory is in mem-f's unit (here 201216): the peak tile also gives it in forwards.
    const foot = await page.locator('.tile:has([data-testid=stat-peak-memory]) .tile-foot').textContent();
    assertEq(Number(await text(page, 'stat-peak-memory')), 3185664, 'ZB-2p peak memory of the 1.5B model');
    assert(foot.includes('15.83 × mem-f'), foot);
    await shot('preset-zb-1.5b');
  },

  async 'hovering a pass explains it and clicking follows its microbatch'({ page, base }) {
    await open(page, base);
    // Hover once the page has settled: the split by cause lands after the chart.
    await page.waitForSelector('[data-testid=attribution-bar]', { timeout: 10000 });
    const canvas = page.locator('[data-testid=gantt-canvas]');
    const box = await canvas.boundingBox();
    // Device 0 row, early in time: a forward.
    const rowY = await page.evaluate(() => 60);
    await page.mouse.move(box.x + box.width * 0.12, box.y + rowY);
    await page.waitForSelector('[data-testid=tooltip]', { timeout: 10000 });
    const tip = await text(page, 'tooltip');
    assert(/forward · microbatch \d+ · stage 0/.test(tip), `tooltip: ${tip}`);
    assert(tip.includes('start') && tip.includes('end'), `tooltip lacks times: ${tip}`);
    const before = await redraws(page);
    await page.mouse.down();
    await page.mouse.up();
    await waitForRedraw(page, before);
    const hint = await page.locator('.hint').textContent();
    assert(/Microbatch \d+ highlighted/.test(hint), `no highlight: ${hint}`);
  },

  async 'zoom and pan change the visible range and fit restores it'({ page, base }) {
    await open(page, base, 'devices=8&microbatches=64');
    const full = Number(await page.locator('[data-testid=gantt-canvas]').getAttribute('data-drawn'));
    let before = await redraws(page);
    await page.getByRole('button', { name: 'Zoom in' }).click();
    await waitForRedraw(page, before);
    await page.getByRole('button', { name: 'Zoom in' }).click();
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=gantt-canvas]').getAttribute('data-culled')) > 0);
    const culled = Number(await page.locator('[data-testid=gantt-canvas]').getAttribute('data-culled'));
    assert(culled > full / 3, `zooming in culled only ${culled} of ${full} passes`);
    const canvas = page.locator('[data-testid=gantt-canvas]');
    await canvas.focus();
    before = await redraws(page);
    await page.keyboard.press('ArrowRight');
    await waitForRedraw(page, before);
    before = await redraws(page);
    await page.getByRole('button', { name: 'Fit', exact: true }).click();
    await waitForRedraw(page, before);
    assertEq(Number(await canvas.getAttribute('data-culled')), 0, 'fit shows everything');
  },
};

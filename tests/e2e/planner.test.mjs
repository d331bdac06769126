// "Compare all" (every family on a Pareto chart, the CLI's sweep) and the lower bound beside
// the bubble split.

import { assert, assertEq, cli, inkRatio, open, query, setValue } from './harness.mjs';

export const tests = {
  async 'compare all shows the sweep front and a click opens a schedule'({ page, base, shot }) {
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&comm=0.25&view=all');
    await page.waitForSelector('[data-testid=pareto-front] [data-family]');
    assert((await inkRatio(page, 'pareto-canvas')) > 0.01, 'the Pareto chart is drawn');
    const shown = await page.locator('[data-testid=pareto-front] [data-family]').evaluateAll((els) => els.map((e) => e.dataset.family).sort());
    const j = JSON.parse(cli(['sweep', '--schedules', 'all', '-p', '4', '--microbatches', '8', '--comm', '0.25', '--json']));
    const front = j.runs.filter((r) => r.pareto).map((r) => r.schedule).sort();
    assertEq(JSON.stringify(shown), JSON.stringify(front), 'the front equals the CLI sweep\'s');
    await shot('compare-all');

    // Hovering a marker names the run.
    const box = await page.locator('[data-testid=pareto-canvas]').boundingBox();
    let named = false;
    for (let x = box.x + 60; x < box.x + box.width - 20 && !named; x += 6) {
      for (let y = box.y + 40; y < box.y + box.height - 30 && !named; y += 6) {
        await page.mouse.move(x, y);
        named = (await page.locator('[data-testid=pareto-tip]').count()) > 0;
      }
    }
    assert(named, 'hovering a marker shows what it is');
    const tip = await page.locator('[data-testid=pareto-tip]').textContent();
    assert(/time .* peak memory/.test(tip), `tip: ${tip}`);

    // A click on the front opens that schedule and closes the view.
    const target = front[0];
    await page.locator(`[data-testid=pareto-front] [data-family="${target}"]`).click();
    await page.waitForFunction((t) => new URL(location.href).searchParams.get('schedule') === t, target, { timeout: 5000 });
    assertEq(query(page).get('view'), null, 'the view closes');
    assertEq(await page.locator('[data-testid=compare-all-view]').count(), 0, 'the card is gone');
  },

  async 'compare all runs in its own worker and never blocks the page'({ page, base }) {
    // zb-opt's exact search is among the twenty-odd runs: a few hundred milliseconds of work
    // that once ran on the page.
    await open(page, base, 'schedule=zb-h1&devices=4&microbatches=8&comm=1');
    await page.waitForSelector('[data-testid=gantt-canvas]');
    await page.evaluate(() => {
      window.__long = [];
      new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); })
        .observe({ type: 'longtask' });
    });
    await page.locator('[data-testid=compare-all]').click();
    await page.waitForSelector('[data-testid=compare-all-view][data-computing=false] [data-testid=pareto-front] [data-family]');
    const j = JSON.parse(cli(['sweep', '--schedules', 'all', '-p', '4', '--microbatches', '8', '--comm', '1', '--json']));
    const shown = await page.locator('[data-testid=pareto-front] [data-family]').evaluateAll((els) => els.map((e) => e.dataset.family).sort());
    assertEq(JSON.stringify(shown), JSON.stringify(j.runs.filter((r) => r.pareto).map((r) => r.schedule).sort()), 'the front equals the CLI sweep\'s');
    const long = await page.evaluate(() => window.__long);
    assert(long.every((d) => d < 150), `no long task on the page while every family runs: ${long.map((d) => d.toFixed(0)).join(', ')} ms`);
    // A settings change recomputes in the background; the chart keeps the last result meanwhile.
    const j6 = JSON.parse(cli(['sweep', '--schedules', 'all', '-p', '4', '--microbatches', '6', '--comm', '1', '--json']));
    const want6 = JSON.stringify(j6.runs.filter((r) => r.pareto).map((r) => r.schedule).sort());
    const runs6 = `${j6.runs.length} families ran`;
    await setValue(page, 'microbatches-input', 6);
    await page.waitForFunction(({ want, runs }) => {
      const view = document.querySelector('[data-testid=compare-all-view]');
      const shown = Array.from(view.querySelectorAll('[data-testid=pareto-front] [data-family]')).map((e) => e.dataset.family).sort();
      return view.dataset.computing === 'false' && JSON.stringify(shown) === want && view.textContent.includes(runs);
    }, { want: want6, runs: runs6 }, { timeout: 20000 });
  },

  async 'per-device costs from the link shade imbalance and match the CLI'({ page, base, shot }) {
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&f=1,1,1,3&comm=0.3&causes=1');
    await page.waitForSelector('[data-testid=attribution-imbalance]');
    const j = JSON.parse(cli(['simulate', '--json', '-s', '1f1b', '-p', '4', '-m', '8', '--f', '1,1,1,3', '--comm', '0.3']));
    for (const part of ['communication', 'imbalance', 'schedule']) {
      const v = Number(await page.locator(`[data-testid=attribution-${part}]`).getAttribute('data-value'));
      assert(Math.abs(v - j.attribution[part]) < 1e-9, `${part}: ${v} vs CLI ${j.attribution[part]}`);
    }
    assert(j.attribution.imbalance !== 0, 'unequal stages have an imbalance part');
    const verdict = await page.locator('[data-testid=bottleneck-verdict]').textContent();
    assert(verdict.includes('device 3'), `verdict: ${verdict}`);
    await shot('causes-unequal');
  },

  async 'the lower bound and the memory part match the CLI'({ page, base }) {
    await open(page, base, 'schedule=zb-auto&devices=4&microbatches=8&comm=0.5&mem-limit=3');
    await page.waitForSelector('[data-testid=lower-bound]');
    const j = JSON.parse(cli(['simulate', '--json', '-s', 'zb-auto', '-p', '4', '-m', '8', '--comm', '0.5', '--mem-limit', '3']));
    const bound = Number(await page.locator('[data-testid=lower-bound]').getAttribute('data-value'));
    assert(Math.abs(bound - j.lower_bound) < 1e-9, `lower bound ${bound} vs CLI ${j.lower_bound}`);
    const memory = Number(await page.locator('[data-testid=attribution-memory]').getAttribute('data-value'));
    assert(Math.abs(memory - j.attribution.memory) < 1e-9, `memory part ${memory} vs CLI ${j.attribution.memory}`);
  },

  async 'a limit no order fits says so instead of printing a bound'({ page, base }) {
    // One forward holds 1; under 0.5 no order of 1F1B's passes exists at all.
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&mem-limit=0.5');
    await page.waitForSelector('[data-testid=lower-bound]');
    const j = JSON.parse(cli(['simulate', '--json', '-s', '1f1b', '-p', '4', '-m', '8', '--mem-limit', '0.5']));
    assert(j.lower_bound_standing === 'none_fits' && j.least_memory === 1, `CLI: ${j.lower_bound_standing} ${j.least_memory}`);
    const text = await page.locator('[data-testid=lower-bound]').textContent();
    assert(text.includes('no order fits the memory limit: a pass needs 1 as it starts'), `playground: ${text}`);
  },
};

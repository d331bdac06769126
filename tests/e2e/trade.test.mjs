// Memory traded for time: recompute and offload in the Memory panel (URL keys = the CLI's
// flags), R passes and host copies on the Gantt chart, and "Fit under the limit", each
// checked against the CLI.

import { assert, assertEq, change, cli, open, query, redraws, text, urlHas, waitForRedraw } from './harness.mjs';

const BASE = ['-s', '1f1b', '-p', '4', '-m', '8'];

/** The CLI's peak memory for the same settings, formatted as the app shows it. */
function cliPeak(args) {
  const j = JSON.parse(cli(['simulate', '--json', ...BASE, ...args]));
  return { shown: String(Number(j.peak_memory.toFixed(4))), value: j.peak_memory, cost: j.cost };
}

async function choose(page, testid, value) {
  const before = await redraws(page);
  await page.locator(`[data-testid=${testid}]`).selectOption(value);
  await waitForRedraw(page, before);
}

const gantt = (page, attr) => page.locator('[data-testid=gantt-canvas]').getAttribute(attr).then(Number);

export const tests = {
  async 'recompute full lowers the peak and offload draws copies, as the CLI computes them'({ page, base, shot }) {
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8');
    assertEq(await text(page, 'stat-peak-memory'), '4', 'the peak without a trade');
    // Selective recompute needs a model to size it: off, with the reason.
    assert(await page.locator('[data-testid=recompute] option[value=selective]').isDisabled(), 'selective is off with plain costs');
    assert((await text(page, 'selective-off')).includes('needs a model'), 'the reason is given');

    await choose(page, 'recompute', 'full');
    await urlHas(page, 'recompute', 'full');
    const full = cliPeak(['--recompute', 'full']);
    assertEq(await text(page, 'stat-peak-memory'), full.shown, 'the peak with full recompute is the CLI\'s');
    assert(full.value < 4, `full recompute saves memory: ${full.value}`);
    assert((await gantt(page, 'data-recomputes')) === 32, 'one R pass per forward is drawn');
    assertEq(await gantt(page, 'data-copies'), 0, 'no copies yet');

    // Offload without a copy time: core's error at the copy time, with its hint.
    await choose(page, 'offload', 'auto');
    const field = page.locator('.field:has([data-testid=copy-time]) .field-error');
    await field.waitFor({ state: 'visible', timeout: 5000 });
    const message = await field.textContent();
    assert(message.includes('offload needs the time a copy to the host takes') && message.includes('hint:'), message);

    await change(page, 'copy-time', 0.5);
    await urlHas(page, 'offload', 'auto');
    await urlHas(page, 'copy-time', '0.5');
    assert((await gantt(page, 'data-copies')) > 0, 'copies to the host are drawn');
    const both = cliPeak(['--recompute', 'full', '--offload', 'auto', '--copy-time', '0.5']);
    assertEq(await text(page, 'stat-peak-memory'), both.shown, 'the peak with offload too is the CLI\'s');
    assertEq(await text(page, 'stat-cost'), String(Number(both.cost.toFixed(4))), 'the cost is the CLI\'s');
    await shot('trade-recompute-offload');

    // Offload off: nothing is copied.
    await choose(page, 'offload', 'none');
    await page.waitForFunction(() => !new URL(location.href).searchParams.has('offload'), null, { timeout: 5000 });
    assertEq(await gantt(page, 'data-copies'), 0, 'no copies');
  },

  async 'a per-device recompute list from a link shows in the control'({ page, base }) {
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&recompute=full,none,none,none');
    const select = page.locator('[data-testid=recompute]');
    assertEq(await select.inputValue(), 'full,none,none,none', 'the control holds the list');
    const label = await select.locator('option:checked').textContent();
    assertEq(label.trim(), 'per device: full,none,none,none', 'the list is its own choice');
    const cliRun = cliPeak(['--recompute', 'full,none,none,none']);
    assertEq(await text(page, 'stat-peak-memory'), cliRun.shown, 'the peak is the CLI\'s');
    assertEq(await gantt(page, 'data-recomputes'), 8, 'device 0 recomputes its 8 forwards');
    // A list of the wrong length is core's error at the control, nothing panics.
    await page.goto(`${base}?schedule=1f1b&devices=4&microbatches=8&recompute=full,none`);
    const error = page.locator('.field:has([data-testid=recompute]) .field-error');
    await error.waitFor({ state: 'visible', timeout: 10000 });
    const message = await error.textContent();
    assert(message.includes('one per device, 4 in all, found 2') && message.includes('hint:'), message);
  },

  async 'fit under the limit chooses a setting that fits, as the CLI confirms'({ page, base, shot }) {
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8');
    assert(await page.locator('[data-testid=fit-limit]').isDisabled(), 'no limit: nothing to fit under');
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&mem-limit=2.5');
    assertEq(await text(page, 'stat-peak-memory'), '4', 'over the limit as it is');
    const before = await redraws(page);
    await page.locator('[data-testid=fit-limit]').click();
    await page.locator('[data-testid=fit-result]').waitFor({ timeout: 20000 });
    await waitForRedraw(page, before);
    const line = await text(page, 'fit-result');
    assert(/^Chose recompute full on devices? [0-9]/.test(line), `names the setting: ${line}`);
    assert(line.includes('per step') && line.includes('saves') && line.includes('under the 2.5 limit'), line);
    await page.waitForFunction(() => new URL(location.href).searchParams.has('recompute'), null, { timeout: 5000 });
    const recompute = query(page).get('recompute');
    assertEq(await page.locator('[data-testid=recompute]').inputValue(), recompute, 'the control shows the choice');
    const fitted = cliPeak(['--recompute', recompute, '--mem-limit', '2.5']);
    assert(fitted.value <= 2.5, `the CLI's peak fits: ${fitted.value}`);
    assertEq(await text(page, 'stat-peak-memory'), fitted.shown, 'the peak is the CLI\'s');
    // The cheapest that fits: recompute on the first devices only, not on all four.
    assert(recompute.split(',').length === 4 && recompute.split(',').includes('none'), `only where needed: ${recompute}`);
    await shot('trade-fit');

    // Under a limit nothing reaches, the least memory that would fit is named.
    await change(page, 'mem-limit-input', 0.05);
    await page.locator('[data-testid=fit-limit]').click();
    await page.waitForFunction(() => document.querySelector('[data-testid=fit-result]')?.textContent.startsWith('Nothing fits'), null, { timeout: 20000 });
    assert((await text(page, 'fit-result')).includes('the least memory any recompute or offload setting reaches is'), 'names the least memory');
  },
};

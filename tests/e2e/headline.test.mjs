// The headline bubble rate is the share of GPU time idle (issue 29): Llama 3 8B with ZB-V on 8
// devices under 80 GiB, where the papers' rate against the busiest device's work says 1%.

import { assert, assertEq, assertNear, cli, open, query, text } from './harness.mjs';

const QUERY = 'schedule=zb-v&devices=8&microbatches=32&model=llama-3-8b&mem-limit=80GiB';
const FLAGS = ['-s', 'zb-v', '-p', '8', '-m', '32', '--model', 'llama-3-8b', '--mem-limit', '80GiB'];

/** A rate as the tiles print it (four decimals, trailing zeros dropped). */
const shown = (v) => String(Number(v.toFixed(4)));

export const tests = {
  async 'the headline tile is the idle GPU share'({ page, base, shot }) {
    await open(page, base, QUERY);
    const json = JSON.parse(cli(['simulate', ...FLAGS, '--json']));
    const work = json.per_device.map((d) => d.work);
    const idle = 1 - work.reduce((a, b) => a + b, 0) / (work.length * json.cost);
    assert(Math.abs(json.bubble_rate - idle) < 1e-12, `simulate's bubble_rate ${json.bubble_rate} is the idle GPU share ${idle}`);
    assert(idle > 0.15 && json.bubble_rate_paper < 0.05, `about a quarter idle (${idle}), the papers' rate about 1% (${json.bubble_rate_paper})`);

    await page.waitForFunction(() => document.querySelector('[data-testid=stat-bubble-rate]')?.textContent.trim() !== '—');
    assertEq(await text(page, 'stat-bubble-rate'), shown(idle), 'the headline tile');
    const foot = await text(page, 'stat-bubble-foot');
    assert(foot.startsWith(`${Number((idle * 100).toFixed(2))}% · of GPU time idle`), `the tile says what it counts: ${foot}`);

    // Each device's own idle share of the step; their mean is the headline.
    const shares = await page.locator('[data-testid=idle-share]').allTextContents();
    assertEq(shares.length, 8, 'one idle share per device');
    const mean = shares.map((s) => Number(s.replace('%', ''))).reduce((a, b) => a + b, 0) / 8;
    assert(Math.abs(mean - idle * 100) < 0.01, `the devices' idle shares ${shares} average to the headline ${idle}`);

    // The split under the stats: every part ≥ 0, most of it imbalance (the head on device 0).
    await page.waitForSelector('[data-testid=attribution-bar]', { timeout: 10000 });
    const value = async (id) => Number(await page.locator(`[data-testid=${id}]`).getAttribute('data-value'));
    for (const cause of ['communication', 'imbalance', 'schedule']) {
      const v = await value(`attribution-${cause}`);
      assertNear(v, json.attribution[cause], `${cause} part`);
      assert(v >= 0, `${cause} is not negative: ${v}`);
    }
    assertNear(await value('attribution-total'), json.cost - json.ideal, 'cost − ideal');
    assert(await value('attribution-imbalance') > 0.8 * (json.cost - json.ideal), 'mostly imbalance');
    const bar = await page.locator('[data-testid=attribution-bar]').textContent();
    assert(!bar.includes('shortens'), `no negative part to explain: ${bar}`);
    await shot('headline-llama-3-8b-zb-v');

    // The papers' rate stays one switch away, labelled.
    await page.locator('[data-testid=bubble-measure]').selectOption('paper');
    await page.waitForFunction((v) => document.querySelector('[data-testid=stat-bubble-rate]')?.textContent.trim() === v, shown(json.bubble_rate_paper));
    assert((await text(page, 'stat-bubble-foot')).includes('Zero Bubble papers'), 'the papers\' rate is labelled');
  },

  // Issue 40: the bottleneck banner offers the fix, computed in a worker, and the numbers it
  // promises are the ones the CLI simulates at the settings it applied.
  async '"balance it" on the headline lowers the idle share, as the CLI confirms'({ page, base, shot }) {
    await open(page, base, QUERY);
    await page.waitForSelector('[data-testid=bottleneck-verdict] [data-testid=balance-it]');
    await page.waitForFunction(() => document.querySelector('[data-testid=stat-bubble-rate]')?.textContent.trim() !== '—');
    const before = Number(await text(page, 'stat-bubble-rate'));
    await page.locator('[data-testid=balance-it]').click();
    await page.waitForSelector('[data-testid=balance-result]', { timeout: 30000 });
    const line = await text(page, 'balance-result');
    assert(line.startsWith('Balanced: '), `the answer: ${line}`);
    await page.waitForFunction((b) => {
      const v = Number(document.querySelector('[data-testid=stat-bubble-rate]')?.textContent.trim());
      return Number.isFinite(v) && v < b;
    }, before, { timeout: 10000 });
    const after = Number(await text(page, 'stat-bubble-rate'));
    assert(after < 0.6 * before, `idle ${before} → ${after}`);
    // The link names what was applied; the CLI at those settings gives the same numbers.
    await page.waitForFunction((s) => new URL(location.href).searchParams.get('schedule') !== s, 'zb-v', { timeout: 5000 });
    const q = query(page);
    const flags = ['-s', q.get('schedule'), '-p', '8', '-m', '32', '--model', 'llama-3-8b', '--mem-limit', '80GiB'];
    if (q.get('layout')) flags.push('--layout', q.get('layout'));
    if (q.get('chunks')) flags.push('--chunks', q.get('chunks'));
    const json = JSON.parse(cli(['simulate', ...flags, '--json']));
    assertEq(String(after), shown(json.bubble_rate), 'the tile equals the CLI\'s bubble rate');
    assert(line.includes(`→ ${Number((json.bubble_rate * 100).toFixed(2))}%`), `the line quotes the new idle share: ${line}`);
    await shot('balance-it');
    // Balanced, it says so rather than moving again.
    await page.locator('[data-testid=balance-it]').click({ timeout: 2000 }).catch(() => {});
    if (await page.locator('[data-testid=balance-it]').count()) {
      await page.waitForFunction(() => document.querySelector('[data-testid=balance-result]')?.textContent.startsWith('Already the fastest'), null, { timeout: 30000 });
    }
  },
};

// Permalinks: the URL holds every setting, reproduces the exact state, and back/forward work.

import { assert, assertEq, canvasDigest, open, redraws, setValue, text, waitForRedraw } from './harness.mjs';

async function state(page) {
  return {
    schedule: await page.locator('[data-testid=schedule-select]').inputValue(),
    devices: await page.locator('[data-testid=devices-input]').inputValue(),
    microbatches: await page.locator('[data-testid=microbatches-input]').inputValue(),
    cost: await text(page, 'stat-cost'),
    bubble: await text(page, 'stat-bubble-rate'),
    peak: await text(page, 'stat-peak-memory'),
    canvas: await canvasDigest(page),
  };
}

export const tests = {
  async 'a permalink reproduces the exact state'({ page, context, base }) {
    const query = 'v=1&schedule=interleaved-1f1b&devices=6&microbatches=12&chunks=3&f=2&b=2.5&w=1.5&comm=0.25&mem-f=2&mem-w=0.5&mem-limit=9&compare=1f1b,zb-h1';
    await open(page, base, query);
    const first = await state(page);
    assertEq(first.schedule, 'interleaved-1f1b', 'schedule from the link');
    assertEq(first.devices, '6', 'devices from the link');
    assertEq(await page.locator('[data-testid=chunks-input]').inputValue(), '3', 'chunks from the link');
    assertEq(await page.locator('[data-testid=comm-input]').inputValue(), '0.25', 'comm from the link');
    assertEq(await page.locator('[data-testid=mem-limit-input]').inputValue(), '9', 'limit from the link');
    const table = await page.locator('[data-testid=compare-table]').textContent();
    assert(table.includes('ZB-H1') && table.includes('1F1B'), `comparison from the link: ${table}`);
    // The link the page offers is the one it was opened with (same keys, canonical order).
    const offered = await page.locator('[data-testid=permalink]').inputValue();
    assertEq(new URL(offered).search, '?' + query, 'copy-link URL');
    await page.locator('[data-testid=copy-link]').click();
    await page.waitForFunction(() => document.querySelector('[data-testid=copy-link]').textContent.includes('copied'));
    const other = await context.newPage();
    await open(other, base, new URL(offered).search);
    assertEq(JSON.stringify(await state(other)), JSON.stringify(first), 'a second page from the link');
  },

  async 'a vocabulary family reads its shard times from the link and from the boxes'({ page, base }) {
    await open(page, base, 'schedule=v-half-vocab&devices=4&microbatches=8&vocab-s=0.5&vocab-t=1&t=3');
    assertEq(await page.locator('[data-testid=s-input]').inputValue(), '0.5', 'S from the link');
    assertEq(await page.locator('[data-testid=t-input]').inputValue(), '1', 'T from the link');
    assert(/^[0-9.]+$/.test(await text(page, 'stat-cost')), `a cost: ${await text(page, 'stat-cost')}`);
    // `t=` stays the playback cursor's time.
    assertEq(Number(await page.locator('[data-testid=time-scrubber]').inputValue()), 3, 't= places the cursor');
    // Without them the family cannot run; typing S draws it, and the link carries it.
    await page.goto(`${base}?schedule=vocab-1&devices=4&microbatches=8`);
    await page.waitForSelector('[data-testid=s-input]');
    assertEq(await redraws(page), 0, 'nothing to draw without S');
    await setValue(page, 's-input', 0.5);
    await waitForRedraw(page, 0);
    assertEq(await page.locator('[data-testid=t-input]').inputValue(), '1', 'T is twice S');
    await page.waitForFunction(() => location.search.includes('&vocab-s=0.5&vocab-t=1'), null, { timeout: 5000 });
    // A family that does not split the vocabulary shows no such boxes.
    await open(page, base, 'schedule=zb-h1');
    assertEq(await page.locator('[data-testid=vocabulary-inputs]').count(), 0, 'no shard boxes on zb-h1');
  },

  async 'every change lands in the address bar'({ page, base }) {
    await open(page, base);
    let before = await redraws(page);
    await page.locator('[data-testid=schedule-select]').selectOption('zb-v');
    await waitForRedraw(page, before);
    before = await redraws(page);
    await setValue(page, 'f-input', 3);
    await waitForRedraw(page, before);
    await page.waitForFunction(() => new URLSearchParams(location.search).get('f') === '3');
    const url = new URL(page.url());
    assertEq(url.searchParams.get('schedule'), 'zb-v', 'schedule in the URL');
    assertEq(url.searchParams.get('f'), '3', 'f in the URL');
    assertEq(url.searchParams.get('v'), '1', 'version in the URL');
  },

  async 'back and forward restore the settings'({ page, base }) {
    await open(page, base, 'devices=4&microbatches=8');
    let before = await redraws(page);
    await setValue(page, 'devices-input', 6);
    await waitForRedraw(page, before);
    await page.waitForTimeout(900); // a new gesture makes a new history entry
    before = await redraws(page);
    await setValue(page, 'microbatches-input', 16);
    await waitForRedraw(page, before);
    assertEq(await text(page, 'stat-cost'), String((16 + 6 - 1) * 3), 'P=6 M=16');
    before = await redraws(page);
    await page.goBack();
    await waitForRedraw(page, before);
    assertEq(await page.locator('[data-testid=microbatches-input]').inputValue(), '8', 'back: microbatches');
    assertEq(await page.locator('[data-testid=devices-input]').inputValue(), '6', 'back: devices');
    assertEq(await text(page, 'stat-cost'), String((8 + 6 - 1) * 3), 'back: P=6 M=8');
    before = await redraws(page);
    await page.goForward();
    await waitForRedraw(page, before);
    assertEq(await page.locator('[data-testid=microbatches-input]').inputValue(), '16', 'forward: microbatches');
  },

  async 'a damaged link opens with defaults and says what it ignored'({ page, base, shot }) {
    await open(page, base, 'devices=zero&microbatches=-3&f=abc&schedule=1f1b');
    assertEq(await text(page, 'stat-cost'), '33', 'defaults used');
    const warnings = await text(page, 'url-warnings');
    assert(warnings.includes('ignored devices=zero: expected a positive integer'), warnings);
    assert(warnings.includes('ignored f=abc: expected a number ≥ 0'), warnings);
    await shot('url-warnings');
  },

  // Issue 43 item 16: `?p=8&microbatch=16` used to run the defaults without a word.
  async 'a key the page does not know is named with the keys it most likely meant'({ page, base }) {
    await open(page, base, 'p=8&microbatch=16');
    assertEq(await page.locator('[data-testid=devices-input]').inputValue(), '4', 'the defaults run');
    const warnings = await text(page, 'url-warnings');
    assert(warnings.includes('ignored p=8: no such key; did you mean devices?'), warnings);
    assert(warnings.includes('ignored microbatch=16: no such key; did you mean microbatches or micro-batch?'), warnings);
    // The page's own view keys and every key it writes are known: no warning.
    const link = 'v=1&schedule=zb-v&devices=8&microbatches=32&model=llama-3-8b&mlp=swiglu&ffn=14336&theme=dark&causes=1&measure=paper';
    await open(page, base, link);
    assertEq(await page.locator('[data-testid=url-warnings]').count(), 0, 'no warning for known keys');
  },
};

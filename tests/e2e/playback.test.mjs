// Playback: the play button, the time scrubber, the cursor's numbers, URL keys, embeds.

import { assert, assertEq, open } from './harness.mjs';

const scrubber = (page) => page.locator('[data-testid=time-scrubber]');
const value = async (page) => Number(await scrubber(page).inputValue());

export const tests = {
  async 'the play button advances the cursor and the numbers at the cursor change'({ page, base, shots }) {
    await open(page, base, 'schedule=zb-h1&devices=4&microbatches=8');
    const end = Number(await scrubber(page).getAttribute('max') ?? await page.evaluate(() => document.querySelector('[data-testid=time-scrubber]').max));
    // Before playing, the cursor rests at the end: everything done.
    assertEq(await value(page), 33 - 33 + await value(page), 'a number');
    const doneBefore = await page.locator('[data-testid=cursor-done]').textContent();
    assert(doneBefore.startsWith('96 of 96'), `at rest everything is done: ${doneBefore}`);
    await page.locator('[data-testid=play-button]').click();
    await page.waitForTimeout(1200);
    const t1 = await value(page);
    const stats1 = await page.locator('[data-testid=cursor-stats]').textContent();
    await page.waitForTimeout(1200);
    const t2 = await value(page);
    const stats2 = await page.locator('[data-testid=cursor-stats]').textContent();
    assert(t1 > 0 && t2 > t1, `the cursor does not advance: ${t1} then ${t2}`);
    assert(stats1 !== stats2, 'the numbers at the cursor do not change');
    assertEq(await page.locator('[data-testid=play-button]').getAttribute('aria-label'), 'Pause', 'playing');
    await page.locator('[data-testid=play-button]').click();
    const paused = await value(page);
    await page.waitForTimeout(400);
    assertEq(await value(page), paused, 'pause stops the cursor');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('t') !== null);
    const done = await page.locator('[data-testid=cursor-done]').textContent();
    assert(!done.startsWith('96 of 96'), `midway not everything is done: ${done}`);
    assert(paused < (Number.isFinite(end) ? end : 1e9), 'paused before the end');
  },

  async 'the scrubber places the cursor; numbers match the schedule at that time'({ page, base, shots }) {
    // 1F1B, P = 4, M = 8, unit costs: at t = 0.5 only device 0 works, holding one forward.
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&memory=1');
    await scrubber(page).fill('0.5');
    await page.waitForFunction(() => document.querySelector('[data-testid=cursor-time]')?.textContent.startsWith('t = 0.5'));
    assertEq((await page.locator('[data-testid=cursor-idle]').textContent()).trim(), 'idle: D1, D2, D3', 'idle devices');
    assert((await page.locator('[data-testid=cursor-done]').textContent()).startsWith('0 of 64 passes done · 1 running'), 'done and running');
    assert((await page.locator('[data-testid=cursor-memory]').textContent()).includes('D0 1'), 'memory of device 0');
    // Keyboard: space plays, space pauses, arrows step.
    await scrubber(page).focus();
    await page.keyboard.press('Space');
    await page.waitForTimeout(500);
    await page.keyboard.press('Space');
    const t = await value(page);
    assert(t > 0.5, `space did not play: ${t}`);
    await page.locator('[data-testid=play-button]').focus();
    await page.locator('[data-testid=playback]').press('ArrowRight');
    assert((await value(page)) > t, 'the right arrow steps forward');
  },

  async 'play=1, t= and speed= in the link are honoured, and the overlay shows the cursor'({ page, base, shots }) {
    await open(page, base, 'schedule=zb-v&devices=4&microbatches=8&t=12&speed=0.5');
    assertEq(await value(page), 12, 't= places the cursor');
    assertEq(await page.locator('[data-testid=speed-select]').inputValue(), '0.5', 'speed=');
    assertEq(await page.locator('[data-testid=play-button]').getAttribute('aria-label'), 'Play', 'not playing without play=1');
    // The overlay veils the future: right of the cursor is paler than left of it.
    const ink = await page.evaluate(() => {
      const c = document.querySelector('[data-testid=gantt-overlay]');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4 * 17) if (d[i] > 0) n++;
      return n;
    });
    assert(ink > 100, `the overlay is empty (${ink})`);
    await page.screenshot({ path: `${shots}/playback-midway.png` });
    await open(page, base, 'schedule=zb-v&devices=4&microbatches=8&play=1&memory=1');
    await page.waitForTimeout(800);
    assert((await value(page)) > 0, 'play=1 starts playing');
    await page.screenshot({ path: `${shots}/playback-playing.png` });
  },

  async '?embed=1&play=1 plays, and loops with loop=1'({ page, base, shots }) {
    await open(page, base, 'schedule=zb-h1&devices=4&microbatches=8&embed=1&play=1&speed=8&loop=1');
    assert(await page.locator('[data-testid=embed]').isVisible(), 'embed view');
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=time-scrubber]').value) > 0);
    const seen = await page.evaluate(async () => {
      const s = document.querySelector('[data-testid=time-scrubber]');
      const values = [];
      for (let i = 0; i < 40; i++) {
        values.push(Number(s.value));
        await new Promise((r) => setTimeout(r, 50));
      }
      return values;
    });
    // speed 8: the whole schedule in a second; two seconds of looping go back to the start.
    const wrapped = seen.some((v, i) => i > 0 && v < seen[i - 1]);
    assert(wrapped, `the embed did not loop: ${seen.join(' ')}`);
    assertEq(await page.locator('[data-testid=play-button]').getAttribute('aria-label'), 'Pause', 'still playing');
    await page.screenshot({ path: `${shots}/embed-playing.png` });
  },

  async 'playback fits a phone: controls on one row, no sideways scroll'({ browser, base, shots }) {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    const page = await context.newPage();
    await open(page, base, 'schedule=zb-v&devices=4&microbatches=8&t=10&memory=1');
    const rows = await page.evaluate(() => [...document.querySelector('.playback-controls').children]
      .filter((e) => e.offsetParent !== null).map((e) => { const r = e.getBoundingClientRect(); return Math.round(r.top + r.height / 2); }));
    assert(new Set(rows).size === 1, `the playback controls wrap: ${rows}`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert(overflow <= 1, `the page scrolls sideways by ${overflow}px`);
    await page.locator('[data-testid=playback]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${shots}/phone-playback-midway.png` });
    await context.close();
  },
};

// Explain it: the closed form's terms pick their passes out of the chart, the schedule is
// derived step by step, and lessons step through settings in the playground and in an embed.

import { assert, assertEq, cli, open, query, urlHas } from './harness.mjs';

const focus = (page) => page.locator('[data-testid=gantt-canvas]').getAttribute('data-focus');

async function waitFocus(page, want) {
  await page.waitForFunction((w) => document.querySelector('[data-testid=gantt-canvas]')?.getAttribute('data-focus') === w, want, { timeout: 5000 })
    .catch(() => {});
  assertEq(await focus(page), want, 'the passes picked out (outlined, shown)');
}

export const tests = {
  async 'hovering or focusing a term picks its passes out of the chart'({ page, base, shots }) {
    await open(page, base, 'schedule=zb-h1&devices=4&microbatches=8&explain=1');
    const terms = page.locator('[data-testid=explain-term][data-formula=bubble]');
    await terms.first().waitFor();
    // The same formula as the CLI's explain, with its terms.
    const explained = JSON.parse(cli(['explain', '-s', 'zb-h1', '-p', '4', '-m', '8', '--json']));
    const alt = await page.locator('[data-testid=explain-bubble] math').first().getAttribute('alttext');
    assertEq(alt, explained.bubble.formula, 'the formula the CLI prints, as the MathML alternative text');
    assert((await page.locator('[data-testid=explain-bubble-check]').textContent()).includes('✓'), 'plugged in equals simulated');
    assertEq(await focus(page), '', 'nothing picked out before a hover');
    // The fill term: the last device waits for the first forward on each of the P−1 others.
    await terms.nth(0).hover();
    await waitFocus(page, '3 96');
    await page.screenshot({ path: `${shots}/explain-hover.png` });
    await page.mouse.move(0, 0);
    await waitFocus(page, '');
    // From the keyboard: focus does what hovering does.
    await terms.nth(1).focus();
    await waitFocus(page, '3 96');
    await page.locator('[data-testid=derive-start]').focus();
    await waitFocus(page, '');
  },

  async 'deriving shows the passes placed so far, with a caption per step, from the keyboard'({ page, base }) {
    // Folded at first: opening it is a click (and explain=1 in the link).
    await open(page, base, 'schedule=zb-h1&devices=4&microbatches=8');
    assertEq(await page.locator('[data-testid=derive-start]').count(), 0, 'folded: nothing built');
    await page.locator('[data-testid=explain-toggle]').click();
    await urlHas(page, 'explain', '1');
    await page.locator('[data-testid=derive-start]').focus();
    await page.keyboard.press('Enter');
    await page.locator('[data-testid=derive-caption]').waitFor();
    // Step 1: microbatch 0's forward on each device, nothing else shown.
    await waitFocus(page, '4 4');
    const first = await page.locator('[data-testid=derive-caption]').textContent();
    assert(first.includes('device 0 to device 3'), first);
    const shown = [4];
    await page.locator('[data-testid=derive-next]').focus();
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('ArrowRight');
      await page.waitForFunction((n) => Number(document.querySelector('[data-testid=gantt-canvas]').getAttribute('data-focus').split(' ')[1]) > n, shown[shown.length - 1], { timeout: 5000 });
      shown.push(Number((await focus(page)).split(' ')[1]));
    }
    assertEq(shown[shown.length - 1], 96, 'the last step shows every pass');
    assert((await page.locator('[data-testid=derive-caption]').textContent()).includes('weight gradients W'), 'ZB-H1 ends with its W');
    await page.keyboard.press('Escape');
    await waitFocus(page, '');
  },

  async 'stepping a lesson in the embed view changes the chart and the caption'({ browser, base, shots }) {
    for (const [width, height] of [[600, 400], [360, 640]]) {
      const context = await browser.newContext({ viewport: { width, height } });
      const page = await context.newPage();
      await open(page, base, 'lesson=zero-bubble&embed=1');
      const caption = () => page.locator('[data-testid=lesson-caption]').textContent();
      const panels = async () => (await page.locator('[data-testid=gantt-canvas]').getAttribute('data-panels')).split(' · ')[0];
      assertEq(await panels(), '1F1B', 'step 1 runs 1F1B, whatever the link left out');
      const first = await caption();
      assert(first.startsWith('1F1B with the backward split'), first);
      await page.locator('[data-testid=lesson-next]').click();
      await page.waitForFunction(() => document.querySelector('[data-testid=gantt-canvas]').getAttribute('data-panels').startsWith('ZB-H1 '), null, { timeout: 10000 });
      assert((await caption()).startsWith('ZB-H1 lets W wait'), await caption());
      await urlHas(page, 'lesson-step', '2');
      assertEq((await page.locator('[data-testid=lesson-count]').textContent()).trim(), '2 / 4', 'where it is');
      // The arrow keys step too.
      await page.locator('[data-testid=lesson-next]').focus();
      await page.keyboard.press('ArrowLeft');
      await page.waitForFunction(() => document.querySelector('[data-testid=gantt-canvas]').getAttribute('data-panels').startsWith('1F1B '), null, { timeout: 10000 });
      const m = await page.evaluate(() => ({
        scrollHeight: document.documentElement.scrollHeight,
        scrollWidth: document.documentElement.scrollWidth,
        playback: document.querySelector('[data-testid=playback]').getBoundingClientRect().bottom,
      }));
      assert(m.scrollHeight <= height && m.scrollWidth <= width, `${width} × ${height}: clipped (${m.scrollWidth} × ${m.scrollHeight})`);
      assert(m.playback <= height, `${width} × ${height}: the playback bar is cut off`);
      await page.screenshot({ path: `${shots}/lesson-embed-${width}x${height}.png` });
      await context.close();
    }
  },

  async 'a teacher writes a lesson by adding steps, and its link replays it'({ page, base, browser }) {
    await open(page, base, 'schedule=gpipe&devices=4&microbatches=8');
    await page.locator('[data-testid=lesson-caption-input]').fill('GPipe holds every activation.');
    await page.locator('[data-testid=lesson-add]').click();
    await page.locator('[data-testid=lesson-bar]').waitFor();
    await page.locator('[data-testid=schedule-select]').selectOption('1f1b');
    await page.waitForFunction(() => document.querySelector('[data-testid=gantt-canvas]').getAttribute('data-panels').startsWith('1F1B '), null, { timeout: 10000 });
    await page.locator('[data-testid=lesson-caption-input]').fill('1F1B holds P.');
    await page.locator('[data-testid=lesson-add]').click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('lesson-step') === '2', null, { timeout: 5000 });
    const lesson = query(page).get('lesson');
    assertEq(lesson.split('\n').length, 5, `a title and two steps: ${JSON.stringify(lesson)}`);
    // The link, embedded, replays the lesson from its first step.
    const context = await browser.newContext({ viewport: { width: 600, height: 400 } });
    const embed = await context.newPage();
    const link = new URL(page.url());
    link.searchParams.set('embed', '1');
    link.searchParams.set('lesson-step', '1');
    link.searchParams.set('schedule', 'zb-v');
    await open(embed, base, link.search);
    assertEq((await embed.locator('[data-testid=gantt-canvas]').getAttribute('data-panels')).split(' · ')[0], 'GPipe', "the step's settings win over the link's");
    assertEq((await embed.locator('[data-testid=lesson-caption]').textContent()).trim(), 'GPipe holds every activation.', 'its caption');
    await context.close();
  },

  async 'a lesson that does not read says why'({ page, base }) {
    await open(page, base, 'lesson=zero-bubbel');
    const bar = (await page.locator('[data-testid=lesson-bar]').textContent()).trim();
    assert(bar.includes('no lesson is named `zero-bubbel`') && bar.includes('hint:'), bar);
  },
};

// Every screen: on a phone the chart comes first; the system colour scheme is followed.

import { assert, assertEq, open } from './harness.mjs';

/** The page background as [r, g, b]. */
async function background(page) {
  return page.evaluate(() => getComputedStyle(document.body).backgroundColor.match(/\d+/g).slice(0, 3).map(Number));
}

export const tests = {
  async 'on a 390 × 844 phone the Gantt chart starts on the first screen'({ browser, base, shots }) {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    await open(page, base, 'schedule=zb-h1&devices=4&microbatches=8');
    const top = await page.evaluate(() => document.querySelector('[data-testid=gantt-canvas]').getBoundingClientRect().top);
    assert(top >= 0 && top < 844 - 60, `the Gantt canvas starts at ${top}px, below the first screen`);
    // The headline numbers come before it, the settings after it, folded.
    const cost = await page.evaluate(() => document.querySelector('[data-testid=stat-cost]').getBoundingClientRect().top);
    assert(cost < top, `the cost tile (${cost}px) is not above the chart (${top}px)`);
    const toggle = page.locator('[data-testid=settings-toggle]');
    assert(await toggle.isVisible(), 'the settings toggle shows on a phone');
    assert(!(await page.locator('[data-testid=schedule-select]').isVisible()), 'settings folded at first');
    await page.screenshot({ path: `${shots}/phone.png` });
    await toggle.click();
    assert(await page.locator('[data-testid=schedule-select]').isVisible(), 'the toggle opens the settings');
    const selectTop = await page.evaluate(() => document.querySelector('[data-testid=schedule-select]').getBoundingClientRect().top);
    assert(selectTop > top, 'the settings come after the chart');
    await page.screenshot({ path: `${shots}/phone-settings.png`, fullPage: true });
    await context.close();
  },

  async 'nothing overflows sideways at 360 px and Gantt rows stay at least 12 px'({ browser, base, shots }) {
    const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    const page = await context.newPage();
    for (const query of ['schedule=zb-v&devices=4&microbatches=8', 'schedule=1f1b&devices=64&microbatches=128', 'schedule=dualpipe&devices=8&microbatches=20&overlap=3']) {
      await open(page, base, query);
      await page.locator('[data-testid=settings-toggle]').click();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      const culprits = await page.evaluate(() => [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className}`));
      assert(overflow <= 1, `${query}: the page scrolls sideways by ${overflow}px (${culprits.join(', ')})`);
      if (query.includes('devices=64')) {
        // The canvas is tall enough for 64 rows of 12 px.
        const height = await page.evaluate(() => document.querySelector('[data-testid=gantt-canvas]').getBoundingClientRect().height);
        assert(height >= 64 * 12, `64 device rows in ${height}px`);
        await page.screenshot({ path: `${shots}/phone-360-64-devices.png` });
      }
    }
    await context.close();
  },

  async 'the dark system preference darkens the page without the toggle, and the toggle overrides it'({ browser, base }) {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 }, colorScheme: 'dark' });
    const page = await context.newPage();
    await open(page, base, 'schedule=1f1b');
    await page.waitForFunction(() => document.documentElement.getAttribute('data-theme') === 'dark');
    const [r, g, b] = await background(page);
    assert(r < 60 && g < 60 && b < 60, `page background is not dark: ${[r, g, b]}`);
    assertEq(new URL(page.url()).searchParams.get('theme'), null, 'no theme key until the toggle is used');
    await page.locator('[data-testid=theme-toggle]').click();
    await page.waitForFunction(() => document.documentElement.getAttribute('data-theme') === 'light');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('theme') === 'light');
    // The override is remembered by the link, over the system preference.
    await open(page, base, new URL(page.url()).search);
    await page.waitForFunction(() => document.documentElement.getAttribute('data-theme') === 'light');
    const [r2] = await background(page);
    assert(r2 > 200, `theme=light did not override the dark preference: ${r2}`);
    await context.close();
  },

  async 'a change of the system preference is followed until the toggle overrides it'({ page, base }) {
    await page.emulateMedia({ colorScheme: 'light' });
    await open(page, base, 'schedule=1f1b');
    await page.waitForFunction(() => document.documentElement.getAttribute('data-theme') === 'light');
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForFunction(() => document.documentElement.getAttribute('data-theme') === 'dark');
    await page.locator('[data-testid=theme-toggle]').click();
    await page.waitForFunction(() => document.documentElement.getAttribute('data-theme') === 'light');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForTimeout(200);
    assertEq(await page.evaluate(() => document.documentElement.getAttribute('data-theme')), 'light', 'the toggle wins over the system');
  },

  async 'the light system preference stays light'({ browser, base }) {
    const context = await browser.newContext({ colorScheme: 'light' });
    const page = await context.newPage();
    await open(page, base, 'schedule=1f1b');
    const [r] = await background(page);
    assert(r > 200, `page background is not light: ${r}`);
    await context.close();
  },

  async 'command-line flags in descriptions do not break across lines'({ page, base }) {
    await open(page, base, 'schedule=v-auto&devices=4&microbatches=8');
    const flags = await page.locator('[data-testid=family-summary] .nowrap').allTextContents();
    assert(flags.includes('--mem-limit'), `--mem-limit is not kept on one line: ${JSON.stringify(flags)}`);
    const wrap = await page.evaluate(() => {
      const e = document.querySelector('[data-testid=family-summary] .nowrap');
      return e.getClientRects().length;
    });
    assertEq(wrap, 1, '--mem-limit is drawn on one line');
    // The F&B time box shows its whole placeholder (it used to read "F+B+W (no").
    await open(page, base, 'schedule=dualpipe&devices=8&microbatches=20');
    const fits = await page.evaluate(() => {
      const input = document.querySelector('#overlap');
      const probe = document.createElement('span');
      const style = getComputedStyle(input);
      probe.style.font = style.font;
      probe.style.position = 'absolute';
      probe.textContent = input.placeholder;
      document.body.appendChild(probe);
      const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      return [probe.getBoundingClientRect().width, room, input.placeholder];
    });
    assert(fits[0] <= fits[1], `the placeholder "${fits[2]}" needs ${fits[0]}px in ${fits[1]}px`);
  },
};

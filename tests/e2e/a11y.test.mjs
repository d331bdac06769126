// Every control is labelled and keyboard-reachable; the dark theme and a narrow screen work.

import { assert, assertEq, open, inkRatio } from './harness.mjs';

export const tests = {
  async 'every control has an accessible name and is reachable by keyboard'({ page, base }) {
    await open(page, base, 'schedule=interleaved-1f1b');
    const unnamed = await page.evaluate(() => {
      const out = [];
      for (const el of document.querySelectorAll('input:not([type=hidden]), select, button, textarea')) {
        const id = el.id;
        const label = (id && document.querySelector(`label[for="${id}"]`)) || el.closest('label');
        const name = el.getAttribute('aria-label') || (label && label.textContent.trim()) || (el.tagName === 'BUTTON' && el.textContent.trim());
        if (!name) out.push(el.outerHTML.slice(0, 80));
      }
      return out;
    });
    assertEq(JSON.stringify(unnamed), '[]', 'controls without a name');
    // Tab from the top reaches the schedule picker, the sliders and the chart.
    const reached = new Set();
    await page.locator('body').click({ position: { x: 1, y: 1 } });
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      reached.add(await page.evaluate(() => document.activeElement?.getAttribute('data-testid') || document.activeElement?.id || ''));
    }
    for (const want of ['schedule-select', 'devices-input', 'devices-slider', 'chunks-input', 'f-input', 'gantt-canvas']) {
      assert(reached.has(want) || reached.has(want.replace('-input', '')), `Tab never reached ${want}: ${[...reached].join(', ')}`);
    }
  },

  async 'the dark theme draws the chart in dark colours'({ page, base, shot }) {
    await open(page, base, 'schedule=zb-v&devices=4&microbatches=8');
    await page.locator('[data-testid=theme-toggle]').click();
    await page.waitForFunction(() => document.documentElement.getAttribute('data-theme') === 'dark');
    await page.waitForTimeout(200);
    const bg = await page.evaluate(() => Array.from(document.querySelector('[data-testid=gantt-canvas]').getContext('2d').getImageData(2, 2, 1, 1).data));
    assert(bg[0] < 60 && bg[1] < 60 && bg[2] < 60, `canvas background is not dark: ${bg}`);
    assert(new URL(page.url()).searchParams.get('theme') === 'dark', 'theme in the link');
    assert((await inkRatio(page)) > 0.05, 'chart drawn');
    await shot('main-dark');
  },

  async 'a laptop-width and a phone-width screen lay out without overflow'({ browser, base, shots }) {
    for (const [w, h, name] of [[1280, 800, 'laptop'], [420, 900, 'narrow']]) {
      const context = await browser.newContext({ viewport: { width: w, height: h } });
      const page = await context.newPage();
      await open(page, base, 'schedule=zb-h1');
      await page.screenshot({ path: `${shots}/layout-${name}.png`, fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      const culprits = await page.evaluate(() => [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className}`));
      assert(overflow <= 1, `${name}: the page scrolls sideways by ${overflow}px (${culprits.join(', ')})`);
      // Nothing pokes out of its card's padding either.
      const outside = await page.evaluate(() => [...document.querySelectorAll('.card, .panel, .tile')].flatMap((card) => {
        const box = card.getBoundingClientRect();
        const style = getComputedStyle(card);
        const [left, right] = [box.left + parseFloat(style.paddingLeft), box.right - parseFloat(style.paddingRight)];
        return [...card.querySelectorAll('input, select, button, label')]
          .filter((e) => e.offsetParent !== null)
          .filter((e) => { const r = e.getBoundingClientRect(); return r.right > right + 0.5 || r.left < left - 0.5; })
          .map((e) => `${e.tagName.toLowerCase()}#${e.id || e.dataset.testid || ''}`);
      }));
      assert(outside.length === 0, `${name}: controls outside their card: ${outside.slice(0, 5).join(', ')}`);
      await context.close();
    }
  },
};

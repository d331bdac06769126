// A big schedule stays fluid: level of detail merges sub-pixel passes and hovering works.

import { assert, open } from './harness.mjs';

export const tests = {
  async 'a 64-device, 512-microbatch schedule draws with level of detail'({ page, base, shot }) {
    const started = Date.now();
    await open(page, base, 'schedule=zb-auto&devices=64&microbatches=512');
    const elapsed = Date.now() - started;
    const merged = Number(await page.locator('[data-testid=gantt-canvas]').getAttribute('data-merged'));
    assert(merged > 10000, `only ${merged} passes merged`);
    assert(elapsed < 15000, `first chart took ${elapsed} ms`);
    const canvas = page.locator('[data-testid=gantt-canvas]');
    const box = await canvas.boundingBox();
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.4);
    await page.waitForSelector('[data-testid=tooltip]', { timeout: 3000 });
    await shot('large-zb-auto-p64-m512');
  },
};

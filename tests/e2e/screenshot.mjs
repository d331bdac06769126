// Regenerates the README's screenshot (docs/screenshot.png) from a release build: the Zero
// Bubble paper's 1.5B preset with its comparison, at 1440 × 960.
// usage: node tests/e2e/screenshot.mjs [dist dir] [output png]

import path from 'node:path';
import { launch, serve } from './harness.mjs';

const dist = path.resolve(process.argv[2] ?? 'dist');
const out = path.resolve(process.argv[3] ?? 'docs/screenshot.png');
const server = await serve(dist);
const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1440, height: 960 } });
await page.goto(server.url);
await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0);
const before = Number(await page.locator('.chart-wrap').getAttribute('data-redraws'));
await page.locator('[data-testid=preset-select]').selectOption('zb-1.5b');
await page.waitForFunction((n) => Number(document.querySelector('.chart-wrap').getAttribute('data-redraws')) > n, before);
await page.screenshot({ path: out });
console.log(`wrote ${out}`);
await browser.close();
server.close?.();
process.exit(0);

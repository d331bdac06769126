// Regenerates the README's screenshot (docs/screenshot.png) from a release build: the Zero
// Bubble paper's 1.5B preset with its comparison, at 1440 × 960. With a query, the playground
// at that link instead; `--fit` then presses "Fit under the limit" first. SHOT_HEIGHT sets a
// taller viewport (to show the Memory panel beside the charts).
// usage: node tests/e2e/screenshot.mjs [dist dir] [output png] [query] [--fit]

import path from 'node:path';
import { launch, serve } from './harness.mjs';

const dist = path.resolve(process.argv[2] ?? 'dist');
const out = path.resolve(process.argv[3] ?? 'docs/screenshot.png');
const query = process.argv[4];
const server = await serve(dist);
const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1440, height: Number(process.env.SHOT_HEIGHT ?? 960) } });
await page.goto(query ? `${server.url}?${query.replace(/^\?/, '')}` : server.url);
await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0);
const redraws = () => page.locator('.chart-wrap').getAttribute('data-redraws').then(Number);
const redrawn = (n) => page.waitForFunction((n) => Number(document.querySelector('.chart-wrap').getAttribute('data-redraws')) > n, n);
if (!query) {
  const before = await redraws();
  await page.locator('[data-testid=preset-select]').selectOption('zb-1.5b');
  await redrawn(before);
} else if (process.argv.includes('--fit')) {
  const before = await redraws();
  await page.locator('[data-testid=fit-limit]').click();
  await page.locator('[data-testid=fit-result]').waitFor();
  await redrawn(before);
  await page.evaluate(() => window.scrollTo(0, 0));
}
await page.screenshot({ path: out });
console.log(`wrote ${out}`);
await browser.close();
server.close?.();
process.exit(0);

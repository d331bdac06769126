// Screenshots of the embed view at the frame sizes a page gives it (600 × 480, 600 × 400,
// 360 × 640), for looking at: node tests/e2e/embed-shots.mjs [dist] [out dir] [query]
import path from 'node:path';
import { launch, serve } from './harness.mjs';

const dist = path.resolve(process.argv[2] ?? 'dist');
const out = path.resolve(process.argv[3] ?? 'target/shots');
const query = process.argv[4] ?? 'schedule=zb-v&devices=4&microbatches=8&embed=1&stats=1';
const server = await serve(dist);
const browser = await launch();
for (const [w, h] of [[600, 480], [600, 400], [360, 640]]) {
  const page = await browser.newPage({ viewport: { width: w, height: h } });
  await page.goto(`${server.url}?${query}`);
  await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0);
  await page.waitForTimeout(300);
  await page.screenshot({ path: `${out}/embed-${w}x${h}.png` });
  await page.close();
}
console.log(`wrote ${out}/embed-*.png`);
await browser.close();
server.close?.();
process.exit(0);

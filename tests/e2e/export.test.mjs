// Export: the SVG equals the CLI's, byte for byte; PNG, JSON and CSV are valid files.

import fs from 'node:fs';
import { assert, assertEq, cli, open } from './harness.mjs';

async function download(page, testid) {
  await page.locator('[data-testid=export-menu]').click();
  const [file] = await Promise.all([page.waitForEvent('download'), page.locator(`[data-testid=${testid}]`).click()]);
  const path = await file.path();
  return { name: file.suggestedFilename(), bytes: fs.readFileSync(path) };
}

export const tests = {
  async 'the SVG export equals bubblescope render for the same settings'({ page, base }) {
    await open(page, base, 'schedule=zb-h1&devices=4&microbatches=8');
    const svg = await download(page, 'export-svg');
    assertEq(svg.name, 'zb-h1-p4-m8.svg', 'file name');
    const expected = cli(['render', '--schedule', 'zb-h1', '--devices', '4', '--microbatches', '8', '-o', '-']);
    assert(svg.bytes.toString('utf8') === expected, `the app's SVG (${svg.bytes.length} bytes) differs from the CLI's (${expected.length} bytes)`);
  },

  async 'compare, memory chart and dark theme export like the CLI flags'({ page, base }) {
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&compare=v-auto&theme=dark&mem-limit=3');
    const svg = await download(page, 'export-svg-memory');
    const expected = cli(['render', '--compare', '1f1b,v-auto', '--memory', '--theme', 'dark', '--mem-limit', '3', '-o', '-']);
    assert(svg.bytes.toString('utf8') === expected, 'compare + memory + dark differs from the CLI');
  },

  async 'PNG, JSON, PyTorch CSV and Perfetto downloads are valid'({ page, base }) {
    await open(page, base, 'schedule=zb-h1&devices=4&microbatches=8');
    const png = await download(page, 'export-png');
    assertEq(png.bytes.subarray(1, 4).toString('latin1'), 'PNG', 'PNG signature');
    const json = JSON.parse((await download(page, 'export-json')).bytes.toString('utf8'));
    assertEq(json.format, 'bubblescope-schedule', 'JSON format');
    assertEq(json.orders.length, 4, 'one order per device');
    const csv = (await download(page, 'export-csv')).bytes.toString('utf8');
    assertEq(csv.trim().split('\n').length, 4, 'one CSV row per device');
    assert(csv.startsWith('0F0,0F1,0F2,0F3,0I0,0W0'), `CSV: ${csv.slice(0, 60)}`);
    const trace = JSON.parse((await download(page, 'export-perfetto')).bytes.toString('utf8'));
    assert(trace.traceEvents.some((e) => e.ph === 'X'), 'trace slices');
  },

  async 'the embed snippet is a ready iframe of these settings'({ page, base }) {
    await open(page, base, 'schedule=zb-v&devices=4&microbatches=8');
    await page.locator('[data-testid=export-menu]').click();
    const snippet = await page.locator('[data-testid=embed-snippet]').inputValue();
    assert(snippet.startsWith('<iframe src="') && snippet.includes('schedule=zb-v') && snippet.includes('embed=1'), snippet);
  },
};

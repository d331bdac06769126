// Opening schedule files: PyTorch CSV and JSON, with compiler-like messages.

import fs from 'node:fs';
import path from 'node:path';
import { assert, assertEq, cli, open, redraws, text, waitForRedraw } from './harness.mjs';

const fixtures = path.resolve('../shared/fixtures/pytorch');

async function pick(page, name, content) {
  const before = await redraws(page);
  await page.locator('[data-testid=import-file]').setInputFiles({ name, mimeType: 'text/plain', buffer: Buffer.from(content) });
  await page.waitForSelector('[data-testid=import-status]');
  return before;
}

export const tests = {
  async 'a PyTorch CSV opens, validates and simulates like the CLI'({ page, base, shot }) {
    await open(page, base, 'f=2&b=2&w=2&overlap=6');
    const file = path.join(fixtures, 'dualpipev_4rank_10mb.csv');
    if (!fs.existsSync(file)) {
      console.log(`      note: ${file} is missing; using a small file of our own`);
      return;
    }
    const before = await pick(page, 'dualpipev_4rank_10mb.csv', fs.readFileSync(file, 'utf8'));
    await waitForRedraw(page, before);
    assert((await text(page, 'import-status')).includes('valid: no problems found'), await text(page, 'import-status'));
    const expected = JSON.parse(cli(['simulate', '--from', file, '--json', '--f', '2', '--b', '2', '--w', '2', '--overlap', '6']));
    assertEq(await text(page, 'stat-cost'), String(expected.cost), 'cost like the CLI');
    assertEq(await page.locator('[data-testid=schedule-select]').count(), 0, 'the family picker gives way to the file');
    await shot('import-dualpipev');
    await page.locator('[data-testid=close-file]').click();
    await page.waitForSelector('[data-testid=schedule-select]');
  },

  async 'a broken file is reported by row and column'({ page, base, shot }) {
    await open(page, base);
    await pick(page, 'broken.csv', '0F0,0Q1,0I0,0W0\n1F0,1I0,1W0\n');
    const diagnostics = await text(page, 'import-diagnostics');
    assert(diagnostics.includes('broken.csv, row 0, column 1: cannot read cell `0Q1`: unknown action type `Q`'), diagnostics);
    assert((await text(page, 'import-status')).includes('error'), 'the status counts errors');
    await shot('import-broken');
  },

  async 'a deadlocked file names every stuck device'({ page, base }) {
    await open(page, base);
    await pick(page, 'deadlock.csv', '0F0,0I0,0W0\n1I0,1F0,1W0\n');
    const diagnostics = await text(page, 'import-diagnostics');
    assert(/row 1/.test(diagnostics) && /deadlock|stuck|waits/.test(diagnostics), diagnostics);
  },

  async 'text from files is escaped wherever it is drawn'({ page, base }) {
    await open(page, base);
    await pick(page, '<img src=x onerror=alert(1)>.csv', '0F0,<script>alert(1)</script>\n');
    assertEq(await page.locator('img[src=x]').count(), 0, 'no injected element');
    assertEq(await page.locator('[data-testid=import-diagnostics] script').count(), 0, 'no injected script');
    const diagnostics = await text(page, 'import-diagnostics');
    assert(diagnostics.includes('<script>'), 'the text is shown as text');
  },
};

// Runs every tests/e2e/*.test.mjs against a built playground.
// usage: node tests/e2e/run.mjs <dist dir> <screenshot dir> [name filter]

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { serve, launch } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(process.argv[2] ?? 'dist');
const shots = path.resolve(process.argv[3] ?? 'target/e2e');
const filter = process.argv[4] ?? '';
fs.mkdirSync(shots, { recursive: true });

if (!fs.existsSync(path.join(dist, 'index.html'))) {
  console.error(`error: ${dist}/index.html not found\n  hint: build the app first (trunk build --release)`);
  process.exit(2);
}

const files = fs.readdirSync(here).filter((f) => f.endsWith('.test.mjs')).sort();
const server = await serve(dist);
const browser = await launch();
let passed = 0;
const failures = [];

for (const file of files) {
  const mod = await import(pathToFileURL(path.join(here, file)).href);
  for (const [name, fn] of Object.entries(mod.tests ?? {})) {
    const full = `${file.replace('.test.mjs', '')} › ${name}`;
    if (filter && !full.includes(filter)) continue;
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, acceptDownloads: true });
    const page = await context.newPage();
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    const started = Date.now();
    try {
      await fn({ page, context, browser, base: server.url, shots, shot: (n) => page.screenshot({ path: path.join(shots, `${n}.png`), fullPage: true }) });
      if (errors.length) throw new Error(`console errors:\n  ${errors.join('\n  ')}`);
      passed++;
      console.log(`ok    ${full} (${Date.now() - started} ms)`);
    } catch (e) {
      failures.push(full);
      console.log(`FAIL  ${full}\n      ${String(e.stack ?? e).split('\n').slice(0, 6).join('\n      ')}`);
      await page.screenshot({ path: path.join(shots, `FAILED-${name.replace(/\W+/g, '-')}.png`), fullPage: true }).catch(() => {});
    }
    await context.close();
  }
}

await browser.close();
await server.close();
console.log(`\n${passed} passed, ${failures.length} failed; screenshots in ${path.relative(process.cwd(), shots)}`);
process.exit(failures.length ? 1 : 0);

// A small browser-test harness: a static server for dist/, Debian's Chromium through
// playwright-core, one fresh page per test, console errors fail the test, screenshots under
// target/e2e/.

import { chromium } from 'playwright-core';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

/** Serves `root` on 127.0.0.1 at a free port; resolves to { url, close }. */
export function serve(root) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    let file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(path.resolve(root))) { res.writeHead(403); res.end(); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    fs.readFile(file, (err, data) => {
      if (err) { res.writeHead(404); res.end('not found'); return; }
      res.writeHead(200, { 'content-type': MIME[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(data);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}/`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
  });
}

export class AssertionError extends Error {}

export function assert(cond, message) {
  if (!cond) throw new AssertionError(message);
}

export function assertEq(actual, expected, message) {
  if (actual !== expected) {
    throw new AssertionError(`${message}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

/**
 * A number the page holds exactly against the CLI's JSON, which prints floating-point noise
 * as the decimal it is (2.8 for 2.800000000000004): equal to 1e-9 of its size.
 */
export function assertNear(actual, expected, message) {
  if (!(Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)))) {
    throw new AssertionError(`${message}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

/** Runs the `bubblescope` CLI built by cargo and returns stdout. */
export function cli(args) {
  const bin = process.env.BUBBLESCOPE_CLI ?? path.resolve('target/debug/bubblescope');
  return execFileSync(bin, args, { encoding: 'utf8' });
}

/** Waits until the Gantt canvas has been drawn `n` times in total. */
export async function redraws(page) {
  return Number(await page.locator('.chart-wrap').getAttribute('data-redraws') ?? '0');
}

export async function waitForRedraw(page, after) {
  await page.waitForFunction((n) => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > n, after, { timeout: 10000 });
}

/** Opens the app with `query` and waits for the first chart. */
export async function open(page, base, query = '') {
  await page.goto(base + (query ? `?${query.replace(/^\?/, '')}` : ''));
  await page.waitForSelector('[data-testid=gantt-canvas]');
  await page.waitForFunction(() => Number(document.querySelector('.chart-wrap')?.getAttribute('data-redraws') ?? 0) > 0, null, { timeout: 15000 });
}

/** Share of canvas pixels that are not the background, sampled on a grid. */
export async function inkRatio(page, testid = 'gantt-canvas') {
  return page.evaluate((id) => {
    const c = document.querySelector(`[data-testid=${id}]`);
    const ctx = c.getContext('2d');
    const { width, height } = c;
    const bg = ctx.getImageData(1, 1, 1, 1).data;
    let ink = 0, total = 0;
    for (let y = 2; y < height; y += 7) {
      for (let x = 2; x < width; x += 7) {
        const d = ctx.getImageData(x, y, 1, 1).data;
        total++;
        if (Math.abs(d[0] - bg[0]) + Math.abs(d[1] - bg[1]) + Math.abs(d[2] - bg[2]) > 30) ink++;
      }
    }
    return ink / Math.max(1, total);
  }, testid);
}

/** Sets an input's value the way typing does and fires `input` (and `change`). */
export async function setValue(page, testid, value) {
  await page.locator(`[data-testid="${testid}"]`).fill(String(value));
}

/** Sets an input's value as `setValue` does and waits for the chart to redraw. */
export async function change(page, testid, value) {
  const before = await redraws(page);
  await setValue(page, testid, value);
  await waitForRedraw(page, before);
}

/** The page address' query parameters. */
export const query = (page) => new URL(page.url()).searchParams;

/** Waits until the address bar holds `key=value` (the URL follows a gesture shortly after). */
export async function urlHas(page, key, value) {
  await page.waitForFunction(([k, v]) => new URL(location.href).searchParams.get(k) === v, [key, value], { timeout: 5000 })
    .catch(() => {});
  assertEq(query(page).get(key), value, `${key} in the URL`);
}

export async function text(page, testid) {
  return (await page.locator(`[data-testid="${testid}"]`).first().textContent())?.trim();
}

/** A digest of a canvas' pixels, to tell one drawing from another. */
export async function canvasDigest(page, testid = 'gantt-canvas') {
  return page.evaluate((id) => {
    const c = document.querySelector(`[data-testid=${id}]`);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let h = 0;
    for (let i = 0; i < d.length; i += 13) h = (h * 31 + d[i]) | 0;
    return `${c.width}x${c.height}:${h}`;
  }, testid);
}

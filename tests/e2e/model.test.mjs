// The "Costs" panel: costs from a model (URL keys = the CLI's flags), the derived per-share
// table, the bottleneck verdict, and switching back to the hand-set costs.

import fs from 'node:fs';
import { assert, assertEq, change, cli, inkRatio, open, redraws, text, urlHas, waitForRedraw } from './harness.mjs';

async function click(page, testid) {
  const before = await redraws(page);
  await page.locator(`[data-testid=${testid}]`).click();
  await waitForRedraw(page, before);
}

/** The CLI's bubble rate, as the app prints it. */
function cliBubble(args) {
  const j = JSON.parse(cli(['simulate', '--json', ...args]));
  return String(Number(j.bubble_rate.toFixed(4)));
}

/** The CLI's whole step (`simulate --json`'s `step`). */
function cliStep(args) {
  return JSON.parse(cli(['simulate', '--json', ...args])).step;
}

/** A number as the step tiles print it: `format_number(v, 1)`-style, no trailing zeros. */
const oneDecimal = (v) => String(Number(v.toFixed(1)));

export const tests = {
  async 'an MoE model: its parameters as the CLI counts them, and expert settings drive the costs'({ page, base, shot }) {
    await open(page, base, 'schedule=1f1b&devices=16&microbatches=32&model=deepseek-v3');
    const args = ['-s', '1f1b', '-p', '16', '-m', '32', '--model', 'deepseek-v3'];
    const counted = JSON.parse(cli(['costs', '--model', 'deepseek-v3', '-p', '16', '--json']));
    const b = (v) => `${Number((v / 1e9).toFixed(2))}B`;
    const said = await text(page, 'model-params');
    assert(said.includes(`${b(counted.params_total)} in all`) && said.includes(`${b(counted.params_active)} active per token`), said);
    assert(said.includes(`MTP ${b(counted.mtp.params_total)} apart`), said);
    assert(await page.locator('details.moe').evaluate((d) => d.open), 'the experts group is open for an MoE model');
    assertEq(await page.locator('#experts').inputValue(), '256', 'routed experts');
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble(args), 'bubble rate');
    await change(page, 'top-k-input', 4);
    await urlHas(page, 'top-k', '4');
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble([...args, '--top-k', '4']), 'bubble rate at top-4');
    assert((await text(page, 'model-cli')).includes('--top-k 4'), 'the CLI line carries --top-k');
    await shot('model-moe-deepseek-v3');
  },

  async 'the whole step: tiles equal simulate --json, ZeRO and global batch ride in the link, strips export like render'({ page, base, shot }) {
    // SC21's 145.6B row as Megatron ran it: full recompute, 1536 GPUs, global batch 2304 (48
    // microbatches).
    await open(page, base, 'schedule=interleaved-1f1b&devices=8&chunks=2&model=sc21-145.6b&recompute=full&gpus=1536&global-batch=2304');
    const args = ['-s', 'interleaved-1f1b', '-p', '8', '--chunks', '2', '--model', 'sc21-145.6b', '--recompute', 'full', '--gpus', '1536', '--global-batch', '2304'];
    let step = cliStep(args);
    await page.waitForSelector('[data-testid=step-tiles]');
    await urlHas(page, 'microbatches', '48');
    assertEq(await text(page, 'stat-tokens-per-gpu'), oneDecimal(step.tokens_per_gpu_s), 'tokens/s/GPU');
    assertEq(await text(page, 'stat-mfu'), `${oneDecimal(step.mfu * 100)}%`, 'MFU');
    const seconds = Number((await text(page, 'stat-step-time')).replace(/\s*s$/, ''));
    assert(Math.abs(seconds - step.time / 1e6) <= 0.01, `step time ${seconds} s vs the CLI's ${step.time / 1e6} s`);
    assert((await text(page, 'stat-step-parts')).startsWith('pipeline '), 'what the step is made of');
    await shot('step-sc21-145.6b');
    // ZeRO 1 shards the optimizer: the link says zero=1 and the CLI line --zero 1.
    const before = await redraws(page);
    await page.locator('[data-testid=model-zero]').selectOption('1');
    await waitForRedraw(page, before);
    await urlHas(page, 'zero', '1');
    assert((await text(page, 'model-cli')).includes('--zero 1'), 'the CLI line carries --zero');
    step = cliStep([...args, '--zero', '1']);
    assertEq(await text(page, 'stat-mfu'), `${oneDecimal(step.mfu * 100)}%`, 'MFU with ZeRO 1');
    // The figure draws the DP reduction and the optimizer step as render does.
    await page.locator('[data-testid=export-menu]').click();
    const [file] = await Promise.all([page.waitForEvent('download'), page.locator('[data-testid=export-svg]').click()]);
    const svg = fs.readFileSync(await file.path(), 'utf8');
    const expected = cli(['render', ...args, '--zero', '1', '-o', '-']);
    assert(svg.includes('DP reduction') && svg.includes('optimizer step'), 'the export draws the strips');
    assert(svg === expected, `the app's SVG (${svg.length} bytes) differs from render's (${expected.length} bytes)`);
  },

  async 'a GPU, efficiencies and a calibration price the model as the CLI does'({ page, base, shot }) {
    await open(page, base, 'schedule=zb-h1&devices=8&microbatches=24&model=zb-1.5b');
    const args = ['-s', 'zb-h1', '-p', '8', '-m', '24', '--model', 'zb-1.5b'];
    // The Zero Bubble preset runs on the A100 it was profiled on; the menu says so.
    assertEq(await page.locator('[data-testid=model-gpu]').inputValue(), 'a100-80gb', 'the preset\'s GPU');
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble(args), 'bubble rate on A100');
    const before = await redraws(page);
    await page.locator('[data-testid=model-gpu]').selectOption('h100-sxm');
    await waitForRedraw(page, before);
    await urlHas(page, 'gpu', 'h100-sxm');
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble([...args, '--gpu', 'h100-sxm']), 'bubble rate on H100');
    assert((await text(page, 'model-cli')).includes('--gpu h100-sxm'), 'the CLI line carries --gpu');
    // An efficiency is a URL key and a flag.
    await change(page, 'gemm-efficiency-input', 0.6);
    await urlHas(page, 'gemm-efficiency', '0.6');
    assertEq(
      await text(page, 'stat-bubble-rate'),
      cliBubble([...args, '--gpu', 'h100-sxm', '--gemm-efficiency', '0.6']),
      'bubble rate at gemm efficiency 0.6',
    );
    // A calibration fits both efficiencies and writes them into the link.
    await page.locator('[data-testid=model-gpu]').selectOption('a100-80gb');
    await urlHas(page, 'gpu', 'a100-80gb');
    await page.locator('[data-testid=calibrate-input]').fill('18.522ms,18.086ms,9.337ms');
    await page.locator('[data-testid=calibrate-input]').dispatchEvent('change');
    const fitted = JSON.parse(cli(['costs', '--model', 'zb-1.5b', '--gpu', 'a100-80gb', '-p', '8', '--calibrate', '18.522ms,18.086ms,9.337ms', '--json']));
    await urlHas(page, 'gemm-efficiency', String(fitted.efficiency.gemm));
    await urlHas(page, 'memory-efficiency', String(fitted.efficiency.memory));
    assert((await text(page, 'calibrate-result')).startsWith('Fitted to 3 layers'), 'the fit is said');
    // Out of reach: the pass is named next to the box.
    await page.locator('[data-testid=calibrate-input]').fill('18.5ms,18.1ms,3ms');
    await page.locator('[data-testid=calibrate-input]').dispatchEvent('change');
    const error = await page.locator('[data-testid=model-panel] [data-testid=error-message]:visible').first().textContent();
    assert(error.includes("calibrate's W of 3 ms"), `the error names W: ${error}`);
    await shot('model-gpu-calibrated');
  },

  async 'a model drives the costs live, and switching back keeps the hand-set ones'({ page, base, shot }) {
    await open(page, base, 'schedule=1f1b&devices=8&microbatches=16&f=2');
    const handBubble = await text(page, 'stat-bubble-rate');
    assertEq(handBubble, cliBubble(['-s', '1f1b', '-p', '8', '-m', '16', '--f', '2']), 'hand-set bubble');

    await click(page, 'costs-from-model');
    await urlHas(page, 'model', 'llama-3-8b');
    assertEq(await page.locator('[data-testid=derived-costs] tbody tr').count(), 8, 'one derived row per device share');
    const args = ['-s', '1f1b', '-p', '8', '-m', '16', '--model', 'llama-3-8b'];
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble(args), 'bubble rate from the model equals the CLI');
    const cost = await text(page, 'stat-cost');
    assert(/ (ms|s)$/.test(cost), `the cost is a time with a unit: ${cost}`);
    const verdict = await text(page, 'bottleneck-verdict');
    assert(verdict.includes('device 7') && verdict.includes('the LM head'), `verdict: ${verdict}`);
    const cliLine = await text(page, 'model-cli');
    assert(cliLine.includes('--model llama-3-8b'), `CLI line: ${cliLine}`);

    // The derived costs follow the model; the URL carries the override.
    const table = await page.locator('[data-testid=derived-costs]').textContent();
    await change(page, 'seq-input', 4096);
    await urlHas(page, 'seq', '4096');
    assert((await page.locator('[data-testid=derived-costs]').textContent()) !== table, 'the derived table changed');
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble([...args, '--seq', '4096']), 'bubble rate after a change');
    // Tensor parallelism: the URL key is the flag, and the page equals the CLI.
    await change(page, 'tp-input', 4);
    await urlHas(page, 'tp', '4');
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble([...args, '--seq', '4096', '--tp', '4']), 'bubble rate with --tp 4');
    assert((await text(page, 'model-cli')).includes('--tp 4'), 'the CLI line carries --tp');

    // Per-device table: work, layers and share of the slowest device.
    const head = await page.locator('[data-testid=device-table] thead').textContent();
    for (const col of ['work', 'layers', 'of slowest']) assert(head.includes(col), `column ${col}: ${head}`);
    const lastRow = await page.locator('[data-testid=device-table] tbody tr').last().textContent();
    assert(lastRow.includes('100%'), `the LM-head device is the slowest: ${lastRow}`);
    await shot('model-llama-3-8b');

    // Back to the hand-set costs: F is 2 again, the model keys are gone.
    await click(page, 'costs-by-hand');
    await urlHas(page, 'model', null);
    assertEq(await page.locator('[data-testid=f-input]').inputValue(), '2', 'hand-set F kept');
    assertEq(await text(page, 'stat-bubble-rate'), handBubble, 'hand-set stats back');
    // And forward again: the model as it was.
    await click(page, 'costs-from-model');
    await urlHas(page, 'seq', '4096');
  },

  // Issue 41: Megatron's combined 1F1B from the page, as `simulate --a2a-overlap` runs it.
  async 'the a2a overlap toggle pairs F and B on an MoE model, as the CLI does'({ page, base, shot }) {
    await open(page, base, 'schedule=1f1b&devices=8&microbatches=16&model=qwen3-235b-a22b');
    const args = ['-s', '1f1b', '-p', '8', '-m', '16', '--model', 'qwen3-235b-a22b'];
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble(args), 'unpaired');
    await click(page, 'a2a-overlap');
    await urlHas(page, 'a2a-overlap', 'true');
    const paired = JSON.parse(cli(['simulate', '--json', ...args, '--a2a-overlap']));
    assert(paired.pairs > 0, `the CLI pairs F and B: ${paired.pairs}`);
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble([...args, '--a2a-overlap']), 'paired');
    assert((await text(page, 'model-cli')).includes('--a2a-overlap') || (await page.locator('[data-testid=gantt-canvas]').getAttribute('data-panels')).includes('a2a'), 'the run says it pairs');
    await shot('a2a-overlap-qwen3');
    // A dense model has no all-to-all to hide: the toggle says why, the last chart stays.
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&model=llama-3-8b');
    await page.locator('[data-testid=a2a-overlap]').click();
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=error-message]')].some((e) => !e.hidden && e.textContent.includes('all-to-all')), null, { timeout: 5000 });
    assert((await inkRatio(page)) > 0.01, 'the last good chart stays');
  },

  async 'a bad model setting says why at the control and keeps the last chart'({ page, base }) {
    await open(page, base, 'schedule=1f1b&devices=4&microbatches=8&model=zb-1.5b');
    await page.locator('[data-testid=layout-input]').fill('Et|tL');
    await page.locator('[data-testid=layout-input]').dispatchEvent('change');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=error-message]')].some((e) => !e.hidden && e.textContent.includes('layout')));
    assert((await inkRatio(page)) > 0.01, 'the last good chart stays');
    assertEq(new URL(page.url()).searchParams.get('layout') ?? 'Et|tL', 'Et|tL', 'the bad layout is kept to fix');
  },

  async 'a permalink with a model and a sized memory limit opens as the CLI runs it'({ page, base }) {
    await open(page, base, 'schedule=zb-auto&devices=8&microbatches=16&model=llama-3-8b&seq=2048&mem-limit=20GiB');
    assertEq(await page.locator('[data-testid=mem-limit-input]').inputValue(), '20GiB', 'the limit shows with its unit');
    const args = ['-s', 'zb-auto', '-p', '8', '-m', '16', '--model', 'llama-3-8b', '--seq', '2048', '--mem-limit', '20GiB'];
    assertEq(await text(page, 'stat-bubble-rate'), cliBubble(args), 'bubble rate equals the CLI');
    // The CLI line is that same run, limit included; the chart title says the limit in GiB.
    assertEq(await text(page, 'model-cli'), `bubblescope simulate ${args.join(' ')}`, 'the CLI line');
    const title = await page.locator('[data-testid=gantt-canvas]').getAttribute('aria-label');
    assert(title.endsWith('· limit 20 GiB'), `the limit in GiB in the chart's label: ${title}`);
  },

  // Issue 43 item 15: the MLP as the model card gives it, and old links' meaning kept.
  async 'the MLP shows its kind and the size the model card gives'({ page, base }) {
    await open(page, base, 'schedule=zb-v&devices=8&microbatches=32&model=llama-3-8b');
    assertEq(await page.locator('[data-testid=model-mlp]').inputValue(), 'swiglu', 'Llama 3 8B is SwiGLU');
    assertEq(await page.locator('[data-testid=ffn-input]').inputValue(), '14336', 'its intermediate size');
    const panel = await page.locator('[data-testid=model-panel]').textContent();
    assert(panel.includes('Intermediate size') && !panel.includes('MLP width'), 'labelled as the model card does');
    const cost = await text(page, 'stat-cost');
    // An old link gave the MLP as a width, 1.5 × the intermediate size: the same model.
    await open(page, base, 'schedule=zb-v&devices=8&microbatches=32&model=llama-3-8b&ffn=21504');
    assertEq(await page.locator('[data-testid=model-mlp]').inputValue(), 'gelu', 'an old link\'s ffn is a width');
    assertEq(await page.locator('[data-testid=ffn-input]').inputValue(), '21504', 'kept as written');
    assertEq(await text(page, 'stat-cost'), cost, 'the same costs as the preset');
    assertEq(await page.locator('[data-testid=url-warnings]').count(), 0, 'read without a warning');
    // Switching the kind keeps the number and says what it means; the link carries both.
    const before = await redraws(page);
    await page.locator('[data-testid=model-mlp]').selectOption('swiglu');
    await waitForRedraw(page, before);
    await page.waitForFunction(() => new URLSearchParams(location.search).get('mlp') === 'swiglu');
    assertEq(new URL(page.url()).searchParams.get('ffn'), '21504', 'the size stays');
    assert((await text(page, 'stat-cost')) !== cost, 'a wider SwiGLU costs more');
  },
};

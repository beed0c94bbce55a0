import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardController } from '../../src/dashboard/dashboard.controller.js';
import { colourOf } from '../../src/dashboard/assets/timeline.js';
import { openBrowser, SCREENSHOTS, waitShowing } from '../support/browser.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

type Browser = Awaited<ReturnType<typeof openBrowser>>;
/* eslint-disable @typescript-eslint/no-explicit-any -- page functions run in the browser; this project compiles without the DOM lib */
type Call = { callbackId: string; url: string; outcome: string; code: number; startMs: number; endMs: number };

describe(DashboardController.name, () => {
  let service: TestService;
  let receiver: Receiver;
  let browser: Browser;

  // TASK_INLINE_MS 5 s: a batch retry answers its count inline ("1 queued again.") even on a loaded machine, where the
  // default 200 ms can run out and answer "… so far; the rest follow in the background" instead
  beforeAll(async () => {
    [service, receiver, browser] = await Promise.all([startTestService({ transformTimeoutMs: 1000, taskInlineMs: 5000 }), Receiver.start(), openBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.dispose();
    await receiver?.close();
  });

  async function sendAndWait(callbacks: unknown[], label: string) {
    const res = await service.api('/v1/batches', { method: 'POST', json: { label, callbacks } });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    // every 200 ms, not 50: the 700 calls' batch takes seconds, and each look is a request the service and the validator answer
    await waitFor(async () => (await service.apiJson(`/v1/batches/${id}`)).status === 'completed', 20_000, 200);
    const timeline = await service.apiJson(`/v1/batches/${id}/sequence?format=json`);
    return { id: id as string, calls: timeline.calls as Call[] };
  }

  /** The colour drawn at the middle of each call's bar, sampled from the canvas in the page. */
  async function barColours(calls: Call[], scrollTop = 0) {
    return browser.page.evaluate(
      ({ calls, scrollTop }) => {
        const canvas = (globalThis as any).document.querySelector('.waterfall .scroller canvas');
        if (!canvas) return calls.map(() => null);
        const d = canvas.dataset;
        const [plotX, plotW, span, rowH] = [Number(d.plotX), Number(d.plotWidth), Number(d.spanMs), Number(d.rowHeight)];
        // Mid-redraw (after a re-order) the canvas may not carry its geometry yet: sample nothing, the caller retries.
        if (![plotX, plotW, span, rowH].every(Number.isFinite)) return calls.map(() => null);
        const ratio = (globalThis as any).devicePixelRatio || 1;
        const ctx = canvas.getContext('2d');
        return calls.map((c: Call, i: number) => {
          if (i * rowH < scrollTop || (i + 1) * rowH > scrollTop + canvas.clientHeight) return null;
          const x0 = plotX + (c.startMs / span) * plotW;
          const w = Math.max(2, plotX + (c.endMs / span) * plotW - x0);
          const y = i * rowH - scrollTop + (rowH >= 12 ? 3 : 0);
          const [r, g, b]: number[] = ctx.getImageData(Math.floor((x0 + w / 2) * ratio), Math.floor(y * ratio), 1, 1).data;
          return `#${[r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
        });
      },
      { calls, scrollTop },
    );
  }

  /**
   * Opens a dashboard page with the key already in the tab's sessionStorage (the login test types it instead):
   * a fresh load of the page, not a hash change of the one open. The key is put there once; it stays for the
   * tab's later loads of the origin, so each page after costs one load, not three.
   */
  async function openLoggedIn(hash: string) {
    const { page } = browser;
    const hasKey = async () =>
      page.url().startsWith(`${service.url}/`) &&
      (await page.evaluate(() => (globalThis as any).sessionStorage.getItem('callbacks.apiKey') as string | null)) === service.key;
    if (!(await hasKey())) {
      await page.goto(`${service.url}/dashboard`);
      await page.evaluate((key) => (globalThis as any).sessionStorage.setItem('callbacks.apiKey', key), service.key);
    }
    // leaving the document first, so a URL that differs only by its hash loads the page again (goto alone would only change the hash)
    await page.goto('about:blank');
    await page.goto(`${service.url}/dashboard${hash}`);
  }

  it('should serve the shell publicly with strict security headers and no inline script', async () => {
    const res = await fetch(`${service.url}/dashboard`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(res.headers.get('content-security-policy')).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|\son[a-z]+=/);
    const js = await fetch(`${service.url}/dashboard/app.js`);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(js.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
  });

  it('should answer 404 for files outside the assets, and keep the API behind the key', async () => {
    for (const path of ['/dashboard/nope.js', '/dashboard/..%2Fpackage.json', '/dashboard/timeline.d.ts', '/dashboard/%2e%2e%2fdashboard.controller.ts']) {
      const res = await fetch(`${service.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { code: string }).code).toBe('not_found');
    }
    expect((await fetch(`${service.url}/v1/batches`)).status).toBe(401);
  });

  it('should log in with a key, list the batch, and draw every call of its waterfall in its outcome colour', async () => {
    const sleeps = [300, 200, 500, 400, 700, 200, 100, 0];
    const { id, calls } = await sendAndWait(
      [
        ...sleeps.map((s, i) => ({ url: `${receiver.url}/work?sleep=${s}`, externalId: `call-${i}` })),
        { url: `${receiver.url}/broken?code=500&sleep=150`, maxAttempts: 1, externalId: 'broken' },
        { url: `${receiver.url}/hang?hang=1`, timeoutMs: 600, maxAttempts: 1, externalId: 'hung' },
      ],
      'classic',
    );
    expect(calls).toHaveLength(10);
    const { page, errors } = browser;

    await page.goto(`${service.url}/dashboard`);
    await page.fill('input[name=key]', 'cbk_wrong_key_0123456789abcdef');
    await page.click('button[type=submit]');
    await page.waitForSelector('form.login p.error:not([hidden])');
    expect(await page.textContent('form.login p.error')).toMatch(/invalid/i);
    expect(errors.splice(0)).toEqual([expect.stringMatching(/status of 401/)]);
    await page.fill('input[name=key]', service.key);
    await page.click('button[type=submit]');
    await page.waitForSelector(`tr[data-batch="${id}"]`);
    await waitFor(async () => !(await page.textContent(`tr[data-batch="${id}"] td:nth-child(6)`))?.includes('…'), 5000);
    expect(await page.textContent(`tr[data-batch="${id}"]`)).toMatch(/classic.*completed.*10.*8 ok · 2 failed/);
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-batches.png`, fullPage: true });

    await page.click(`tr[data-batch="${id}"] a`);
    await page.waitForSelector('.waterfall canvas[data-calls="10"]');
    const colours = await barColours(calls);
    expect(colours).toEqual(calls.map((c) => colourOf(c.outcome)));
    expect(new Set(colours).size).toBe(3);
    expect(await page.textContent('.legend')).toMatch(/success 8.*http_error 1.*timeout 1/);
    expect(await page.textContent('#phases')).toMatch(/wait/);
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-batch.png`, fullPage: true });
    await page.selectOption('select[name=order]', 'slowest');
    const slowest = calls.slice().sort((a, b) => b.endMs - b.startMs - (a.endMs - a.startMs));
    await waitFor(async () => (await barColours(slowest)).join() === slowest.map((c) => colourOf(c.outcome)).join(), 3000);
    expect(await page.evaluate(() => (globalThis as any).document.querySelectorAll('.waterfall').length)).toBe(1);
    await page.selectOption('select[name=order]', 'start');
    await page.click('text=Latency over time of this batch');
    await page.waitForSelector('#latency');
    const perBatch = (await page.locator('#latency tbody tr td:nth-child(2)').allTextContents()).map(Number);
    expect(perBatch.reduce((a, b) => a + b, 0)).toBe(10);
    await page.goBack();
    await page.waitForSelector('.waterfall canvas[data-calls="10"]');

    const hung = calls.findIndex((c) => c.outcome === 'timeout');
    const box = (await page.locator('.waterfall .scroller canvas').boundingBox())!;
    await page.mouse.move(box.x + 100, box.y + hung * 22 + 11);
    await page.waitForSelector('#tooltip:not([hidden])');
    const tip = await page.textContent('#tooltip');
    expect(tip).toContain(calls[hung].url);
    expect(tip).toMatch(/code0 \(timeout\).*total6\d\d ms/);
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-tooltip.png` });

    await page.mouse.click(box.x + 100, box.y + hung * 22 + 11);
    await page.waitForSelector('#attempts');
    expect(page.url()).toContain(`#/callback/${calls[hung].callbackId}`);
    expect(await page.textContent('#attempts tbody')).toMatch(/timeout/);
    expect(await page.isHidden('#tooltip')).toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-callback.png`, fullPage: true });
    expect(errors).toEqual([]);
  });

  it('should keep a waterfall of many more calls than its view holds usable: every row reachable, only the view drawn', async () => {
    // five times the 140 rows the view shows (4 px each in 560 px)
    const n = 700;
    const { id, calls } = await sendAndWait(
      Array.from({ length: n }, (_, i) => ({ url: `${receiver.url}/many/${i}?sleep=${i % 7}` })),
      'many',
    );
    expect(calls).toHaveLength(n);
    const { page, errors } = browser;
    const started = Date.now();
    await openLoggedIn(`#/batch/${id}`);
    await page.waitForSelector(`.waterfall canvas[data-calls="${n}"]`);
    const loadMs = Date.now() - started;
    const layout = await page.evaluate(() => {
      const scroller = (globalThis as any).document.querySelector('.waterfall .scroller');
      const canvas = scroller.querySelector('canvas')!;
      return { scrollHeight: scroller.scrollHeight, clientHeight: scroller.clientHeight, canvasHeight: canvas.clientHeight };
    });
    expect(layout.scrollHeight).toBe(n * 4);
    expect(layout.canvasHeight).toBe(layout.clientHeight);
    expect(layout.canvasHeight).toBeLessThanOrEqual(560);
    const top = await barColours(calls);
    expect(top.filter(Boolean).length).toBe(layout.clientHeight / 4);
    for (const [i, c] of top.entries()) if (c) expect(c, `row ${i}`).toBe(colourOf(calls[i].outcome));

    const scrollTop = n * 4 - layout.clientHeight;
    await page.evaluate((t) => {
      (globalThis as any).document.querySelector('.waterfall .scroller').scrollTop = t;
    }, scrollTop);
    await page.waitForFunction((t) => (globalThis as any).document.querySelector('.waterfall .scroller').scrollTop === t, scrollTop);
    const bottom = await barColours(calls, scrollTop);
    expect(bottom[n - 1]).toBe(colourOf(calls[n - 1].outcome));
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-${n}-calls.png`, fullPage: true });
    expect(loadMs).toBeLessThan(5000);
    expect(errors).toEqual([]);
  });

  it("should keep a running batch's page fresh until the batch completes", async () => {
    const { page, errors } = browser;
    const res = await service.api('/v1/batches', {
      method: 'POST',
      json: { callbacks: [{ url: `${receiver.url}/slow?sleep=2000` }, { url: `${receiver.url}/quick` }] },
    });
    const { id } = (await res.json()) as { id: string };
    await openLoggedIn(`#/batch/${id}`);
    await page.waitForSelector('.summary .status');
    expect(await page.textContent('.summary .status')).toMatch(/pending|running/);
    await page.waitForSelector('.summary .status.completed', { timeout: 8000 });
    await page.waitForSelector('.waterfall canvas[data-calls="2"]');
    expect(errors).toEqual([]);
  });

  it('should show latency over time from the history API as p50/p90/p99 lines, or an empty state', async () => {
    const { page, errors } = browser;
    await sendAndWait([{ url: `${receiver.url}/h?sleep=20` }, { url: `${receiver.url}/h?code=503`, maxAttempts: 1 }], 'history');
    const to = new Date(Date.now() + 1000);
    const from = new Date(to.getTime() - 3_600_000);
    const res = await service.api(`/v1/history/latency?bucket=1m&from=${from.toISOString()}&to=${to.toISOString()}`);
    await openLoggedIn('#/latency?range=1h&bucket=1m');
    await page.waitForSelector('main svg.chart, main p.empty, main p.error', { state: 'attached' });
    expect(await page.locator('main p.error').count()).toBe(0);
    if (res.status === 404) {
      expect(await page.textContent('main p.empty')).toMatch(/not available/);
    } else {
      expect(res.status).toBe(200);
      const history = (await res.json()) as { items: Array<{ count: number; ok: number; failed: number }> };
      expect(history.items.length).toBeGreaterThan(0);
      expect(await page.locator('main svg.chart path').count()).toBe(3);
      expect(await page.locator('#latency tbody tr').count()).toBe(history.items.length);
      const cells = await page.locator('#latency tbody tr').first().locator('td').allTextContents();
      const newest = history.items.at(-1)!;
      expect(cells.slice(1, 4)).toEqual([newest.count, newest.ok, newest.failed].map(String));
    }
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-latency.png`, fullPage: true });
    expect(errors).toEqual([]);
  });

  it('should run the actions of someone fixing an endpoint, each after confirmation: retry, batch retry, disable, cancel, enable', async () => {
    const { page, errors } = browser;
    const receiverPath = '/v1/receivers/shop-ui';
    expect((await service.api(receiverPath, { method: 'PUT', json: { url: `${receiver.url}/ui`, description: 'UI shop' } })).status).toBe(201);
    const {
      secrets: [{ secret }],
    } = await service.apiJson(receiverPath);
    const { id: batchId } = await sendAndWait(
      [
        { receiver: 'shop-ui', body: { ok: true } },
        { receiver: 'shop-ui', url: `${receiver.url}/ui-broken?code=500`, maxAttempts: 1, externalId: 'broken-ui' },
      ],
      'fixing',
    );
    const [failed] = (await service.apiJson(`/v1/callbacks?receiver=shop-ui&status=failed`)).items;
    const confirm = async (answer: 'yes' | 'no') => {
      await page.waitForSelector('dialog.confirm[open]');
      await page.click(`dialog.confirm [data-confirm=${answer}]`);
      await page.waitForSelector('dialog.confirm', { state: 'detached' });
    };
    const attemptsOf = async (id: string) => (await service.apiJson(`/v1/callbacks/${id}`)).attemptCount;

    // A whole batch row is clickable, not only its id.
    await openLoggedIn('#/');
    await page.click(`tr[data-batch="${batchId}"] td:nth-child(2)`);
    await page.waitForSelector('.summary .status.completed');
    expect(page.url()).toContain(`#/batch/${batchId}`);

    // Retry one failed callback: "Cancel" in the dialog changes nothing, "Retry" sends it again.
    await openLoggedIn(`#/callback/${failed.id}`);
    await page.click('[data-action=retry]');
    await confirm('no');
    expect(await attemptsOf(failed.id)).toBe(1);
    await page.click('[data-action=retry]');
    await confirm('yes');
    await waitFor(async () => (await attemptsOf(failed.id)) === 2 && (await service.apiJson(`/v1/callbacks/${failed.id}`)).status === 'failed', 10_000);

    // Retry the batch's failed callbacks.
    await openLoggedIn(`#/batch/${batchId}`);
    await page.click('[data-action=retry-batch]');
    await confirm('yes');
    await page.waitForSelector('text=1 queued again.');
    await waitFor(async () => (await attemptsOf(failed.id)) === 3, 10_000);

    // The receivers list and page: settings, a masked secret and its reveal button, figures, latency chart.
    await openLoggedIn('#/receivers');
    await page.click('tr[data-receiver="shop-ui"] td:nth-child(4)');
    await page.waitForSelector('#secrets');
    expect(page.url()).toContain('#/receiver/shop-ui');
    expect(await page.textContent('#settings')).toContain(`${receiver.url}/ui`);
    expect(await page.textContent('#secrets code.secret')).not.toContain(secret);
    expect(await page.content()).not.toContain(secret);
    await page.click('#secrets [data-action=reveal]');
    expect(await page.textContent('#secrets code.secret')).toBe(secret);
    expect(await page.textContent('#figures')).toMatch(/attempts4.*success1.*http_error3/);
    expect(await page.locator('main svg.chart path').count()).toBe(3);
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-receiver.png`, fullPage: true });

    // Disable it: what it gets is held, shown as such, and can be cancelled.
    await page.click('[data-action=disable]');
    await confirm('yes');
    await page.waitForSelector('[data-action=enable]');
    expect((await service.apiJson(receiverPath)).disabled).toBe(true);
    const held = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: {
        callbacks: [
          { receiver: 'shop-ui', body: { n: 1 } },
          { receiver: 'shop-ui', body: { n: 2 } },
        ],
      },
    });
    const [first, second] = held.callbacks.map((c: { id: string }) => c.id);
    await openLoggedIn(`#/callback/${first}`);
    expect(await page.textContent('#waiting')).toMatch(/receiver shop-ui: disabled/);
    await page.click('[data-action=cancel]');
    await confirm('yes');
    await page.waitForSelector('text=Cancelled.');
    expect((await service.apiJson(`/v1/callbacks/${first}`)).status).toBe('cancelled');

    // Enable it: the held one goes out.
    await openLoggedIn('#/receiver/shop-ui');
    expect(await page.textContent(`tr[data-callback="${second}"]`)).toMatch(/held/);
    await page.click('[data-action=enable]');
    await confirm('yes');
    await page.waitForSelector('[data-action=disable]');
    await waitFor(async () => (await service.apiJson(`/v1/callbacks/${second}`)).status === 'succeeded', 10_000);
    expect(receiver.byId(first)).toEqual([]);
    expect(receiver.byId(second)).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it("should tell a batch's callbacks apart by the end of their ids (or their externalId), with the full id on hover and a copy button", async () => {
    const { page, context, errors } = browser;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.url });
    const { id: batchId } = await sendAndWait(
      [
        ...Array.from({ length: 6 }, () => ({ url: `${receiver.url}/ids?code=500`, maxAttempts: 1 })),
        { url: `${receiver.url}/ids?code=500`, maxAttempts: 1, externalId: 'order-7' },
      ],
      'ids',
    );
    const failed = (await service.apiJson(`/v1/batches/${batchId}/callbacks?status=failed`)).items as Array<{ id: string; externalId: string | null }>;
    expect(failed).toHaveLength(7);
    await openLoggedIn(`#/batch/${batchId}`);
    await page.waitForSelector('#failed tbody tr');
    const shown = await page.$$eval('#failed tbody tr[data-callback] td:first-child a', (links: any[]) =>
      links.map((a) => ({ id: a.dataset.id, text: a.textContent, title: a.title })),
    );
    expect(shown.map((s) => s.id).sort()).toEqual(failed.map((c) => c.id).sort());
    expect(new Set(shown.map((s) => s.text)).size).toBe(7);
    for (const s of shown) {
      const c = failed.find((f) => f.id === s.id)!;
      if (c.externalId) {
        expect(s.text).toBe('order-7');
        expect(s.title).toBe(`order-7 (id ${c.id})`);
      } else {
        expect(s.text, c.id).toMatch(/^…[0-9a-f]{6,}$/);
        expect(c.id.replace(/-/g, '').endsWith(s.text!.slice(1)), c.id).toBe(true);
        expect(s.title).toBe(c.id);
      }
    }
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-batch-ids.png`, fullPage: true });

    // Copying an id puts the whole id on the clipboard, and does not open the row it is in.
    const target = shown.find((s) => s.text !== 'order-7')!.id;
    await page.click(`#failed button[data-copy="${target}"]`);
    await page.waitForSelector(`#failed button[data-copy="${target}"]:text("copied")`);
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(target);
    await openLoggedIn('#/');
    await page.waitForSelector(`tr[data-batch="${batchId}"]`);
    await page.click(`tr[data-batch="${batchId}"] button[data-copy="${batchId}"]`);
    await waitFor(async () => (await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())) === batchId, 3000);
    expect(page.url()).not.toContain('#/batch/');
    const batchLink = page.locator(`tr[data-batch="${batchId}"] td:first-child a`);
    expect(await batchLink.getAttribute('title')).toBe(batchId);
    expect(batchId.replace(/-/g, '').endsWith((await batchLink.textContent())!.slice(1))).toBe(true);
    expect(errors).toEqual([]);
  });

  it('should show a failing receiver as failing, with its success rate and pending and held counts, and sort it first by health', async () => {
    const { page, errors } = browser;
    const put = async (name: string, json: Record<string, unknown>) =>
      expect((await service.api(`/v1/receivers/${name}`, { method: 'PUT', json })).status).toBe(201);
    await put('a-steady', { url: `${receiver.url}/steady` });
    await put('z-broken', { url: `${receiver.url}/broken-shop?code=500`, maxAttempts: 1 });
    await put('m-paused', { url: `${receiver.url}/paused`, disabled: true });
    // a-steady fails once, then succeeds four times (so it is not failing): two batches, one after the other.
    await sendAndWait([{ receiver: 'a-steady', url: `${receiver.url}/steady?code=500`, maxAttempts: 1 }], 'health');
    await sendAndWait([...Array.from({ length: 4 }, () => ({ receiver: 'a-steady' })), { receiver: 'z-broken' }, { receiver: 'z-broken' }], 'health');
    await service.api('/v1/batches', { method: 'POST', json: { callbacks: [{ receiver: 'm-paused' }, { receiver: 'm-paused' }] } });

    await openLoggedIn('#/receivers');
    await page.waitForSelector('tr[data-receiver="z-broken"]');
    const cells = async (name: string) => (await page.locator(`tr[data-receiver="${name}"] td`).allTextContents()).map((t) => t.trim());
    const row = async (name: string) => {
      const [, , state, failingSince, success, pending, held] = await cells(name);
      return { state, failingSince, success, pending, held, data: await page.getAttribute(`tr[data-receiver="${name}"]`, 'data-state') };
    };
    const broken = await row('z-broken');
    expect(broken).toMatchObject({ state: 'failing', data: 'failing', success: '0% of 2', pending: '0', held: '0' });
    expect(broken.failingSince).not.toBe('–');
    expect(await row('a-steady')).toMatchObject({ state: 'ok', failingSince: '–', success: '80% of 5', pending: '0', held: '0' });
    expect(await row('m-paused')).toMatchObject({ state: 'disabled', success: '–', pending: '0', held: '2' });
    const names = () => page.$$eval('#receivers tbody tr', (rows: any[]) => rows.map((r) => r.dataset.receiver));
    expect((await names()).indexOf('z-broken')).toBeGreaterThan(0);
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-receivers.png`, fullPage: true });

    await page.selectOption('select[name=sort]', 'health');
    await waitFor(async () => (await names())[0] === 'z-broken', 5000);
    expect(page.url()).toContain('#/receivers?sort=health');
    const byHealth = await names();
    expect(byHealth.slice(1)).toEqual(byHealth.slice(1).sort());
    expect(await page.inputValue('select[name=sort]')).toBe('health');
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-receivers-health.png`, fullPage: true });
    expect(errors).toEqual([]);
  });

  it("should replay a receiver's failed callbacks from its page: the count asked first, then the progress to the end", async () => {
    const { page, errors } = browser;
    // answers 503 to each webhook-id's first request: with one attempt allowed, all three fail; sent again, they arrive
    expect((await service.api('/v1/receivers/replay-ui', { method: 'PUT', json: { url: `${receiver.url}/replay?failTimes=1`, maxAttempts: 1 } })).status).toBe(
      201,
    );
    await sendAndWait(
      Array.from({ length: 3 }, (_, i) => ({ receiver: 'replay-ui', body: { i } })),
      'replay',
    );
    const arrivals = () => receiver.requests.filter((r) => r.url.startsWith('/replay')).length;
    expect(arrivals()).toBe(3);

    await openLoggedIn('#/receiver/replay-ui');
    await page.waitForSelector('[data-action=replay]');
    const replay = async (answer: 'yes' | 'no') => {
      await page.click('[data-action=replay]');
      await page.waitForSelector('dialog.confirm[open]');
      expect(await page.textContent('dialog.confirm p')).toMatch(/^Send 3 failed callback\(s\) of replay-ui accepted since .+ again\?/);
      await page.click(`dialog.confirm [data-confirm=${answer}]`);
      await page.waitForSelector('dialog.confirm', { state: 'detached' });
    };
    // "Cancel" starts nothing
    await replay('no');
    expect((await service.apiJson('/v1/callbacks?receiver=replay-ui&status=failed')).items).toHaveLength(3);
    await replay('yes');
    // the progress, then the page drawn again: the list without them, the last progress on top
    await page.waitForSelector('p.flash', { timeout: 20_000 });
    expect(await page.textContent('p.flash')).toBe('Replay of replay-ui: requeued 3/3, delivered 3, failed 0, pending 0 (done)');
    expect(await page.locator('tr[data-callback]').count()).toBe(0);
    expect(arrivals()).toBe(6);
    expect((await service.apiJson('/v1/callbacks?receiver=replay-ui&status=succeeded')).items).toHaveLength(3);
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-receiver-replay.png`, fullPage: true });

    // nothing left in the window: said so, no question asked
    await page.click('[data-action=replay]');
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#replay-progress')?.textContent === 'No failed callbacks in that window.');
    expect(errors).toEqual([]);
  });

  it("should list events by type, open one with its payload and its fan-out, and show a receiver's subscriptions", async () => {
    const { page, errors } = browser;
    for (const type of ['shop.order.paid', 'shop.order.refunded']) {
      expect((await service.api(`/v1/event-types/${type}`, { method: 'PUT', json: {} })).status).toBe(201);
    }
    const subscribe = async (name: string, json: Record<string, unknown>) =>
      expect((await service.api(`/v1/receivers/${name}`, { method: 'PUT', json: { url: `${receiver.url}/${name}`, ...json } })).status).toBe(201);
    await subscribe('ev-big', { eventTypes: ['shop.order.*'], filter: { amount: { $gte: 100 } } });
    await subscribe('ev-paid', { eventTypes: ['shop.order.paid'] });
    await subscribe('ev-down', { url: `${receiver.url}/ev-down?code=500`, maxAttempts: 1, eventTypes: ['shop.order.paid'] });
    const publish = async (json: Record<string, unknown>) => {
      const res = await service.api('/v1/events', { method: 'POST', json });
      expect(res.status).toBe(202);
      return (await res.json()) as { id: string; deliveries: number };
    };
    expect((await publish({ type: 'shop.order.paid', id: 'evt-ui-paid', payload: { orderId: 'o-77', amount: 150 } })).deliveries).toBe(3);
    expect((await publish({ type: 'shop.order.refunded', id: 'evt-ui-refund', payload: { orderId: 'o-77', amount: 150 } })).deliveries).toBe(1);
    expect((await publish({ type: 'shop.order.paid', id: 'evt-ui-small', payload: { orderId: 'o-78', amount: 5 } })).deliveries).toBe(2);
    const settled = async (id: string) =>
      (await service.apiJson(`/v1/events/${id}`)).callbacks.every((d: { status: string }) => d.status !== 'pending' && d.status !== 'in_flight');
    await waitFor(async () => (await settled('evt-ui-paid')) && (await settled('evt-ui-small')), 20_000, 200);

    // the list, newest first, then narrowed to one type (kept in the address)
    await openLoggedIn('#/events');
    await page.waitForSelector('tr[data-event="evt-ui-refund"]');
    const listed = () => page.$$eval('#events tbody tr[data-event]', (rows: any[]) => rows.map((r) => r.dataset.event));
    expect(await listed()).toEqual(['evt-ui-small', 'evt-ui-refund', 'evt-ui-paid']);
    expect((await page.locator('tr[data-event="evt-ui-paid"] td').allTextContents()).slice(1, 3)).toEqual(['shop.order.paid', '3']);
    await page.selectOption('select[name=type]', 'shop.order.paid');
    await waitFor(async () => (await listed()).join() === 'evt-ui-small,evt-ui-paid', 5000);
    expect(page.url()).toContain('#/events?type=shop.order.paid');
    expect(await page.inputValue('select[name=type]')).toBe('shop.order.paid');
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-events.png`, fullPage: true });

    // one event: its payload and each delivery's receiver, status, attempts and last code, linked
    await page.click('tr[data-event="evt-ui-paid"] td:nth-child(2)');
    await page.waitForSelector('#deliveries');
    expect(page.url()).toContain('#/event/evt-ui-paid');
    expect(JSON.parse((await page.textContent('#payload'))!)).toEqual({ orderId: 'o-77', amount: 150 });
    const delivery = async (name: string) => (await page.locator(`#deliveries tr[data-receiver="${name}"] td`).allTextContents()).slice(1, 5);
    expect(await page.locator('#deliveries tbody tr').count()).toBe(3);
    expect(await delivery('ev-big')).toEqual(['ev-big', 'succeeded', '1', '200']);
    expect(await delivery('ev-paid')).toEqual(['ev-paid', 'succeeded', '1', '200']);
    expect(await delivery('ev-down')).toEqual(['ev-down', 'failed', '1', '500']);
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-event.png`, fullPage: true });
    const failedId = await page.getAttribute('#deliveries tr[data-receiver="ev-down"]', 'data-callback');
    await page.click('#deliveries tr[data-receiver="ev-down"] td:first-child a');
    await page.waitForSelector('#attempts');
    expect(page.url()).toContain(`#/callback/${failedId}`);
    expect(await page.textContent('#attempts tbody')).toMatch(/http_error.*500/);

    // a receiver's subscriptions: its types (names link to their events) and its filter
    await page.goBack();
    await page.waitForSelector('#deliveries');
    await page.click('#deliveries tr[data-receiver="ev-big"] td:nth-child(2) a');
    await page.waitForSelector('#subscriptions');
    expect(page.url()).toContain('#/receiver/ev-big');
    expect(await page.locator('#subscriptions [data-event-type]').allTextContents()).toEqual(['shop.order.*']);
    expect(JSON.parse((await page.textContent('#subscription-filter'))!)).toEqual({ amount: { $gte: 100 } });
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-receiver-subscriptions.png`, fullPage: true });
    await openLoggedIn('#/receiver/ev-paid');
    await page.waitForSelector('#subscriptions');
    expect(await page.textContent('#subscriptions')).toMatch(/none: every event of its types/);
    await page.click('#subscriptions a[href="#/events?type=shop.order.paid"]');
    await waitFor(async () => (await listed()).join() === 'evt-ui-small,evt-ui-paid', 5000);

    // pages of 50: "More" reads the next one (events made without an id show the end of theirs)
    for (let i = 0; i < 50; i++) await publish({ type: 'shop.order.refunded', payload: { orderId: `o-${i}`, amount: 1 } });
    await openLoggedIn('#/events?type=shop.order.refunded');
    await page.waitForSelector('#events tbody tr[data-event]');
    expect(await page.locator('#events tbody tr[data-event]').count()).toBe(50);
    await page.click('main button:text("More")');
    await waitFor(async () => (await listed()).length === 51, 5000);
    expect((await listed()).at(-1)).toBe('evt-ui-refund');
    expect(await page.isHidden('main button:text("More")')).toBe(true);
    expect(await page.locator('#events tbody tr[data-event] td:first-child a').first().textContent()).toMatch(/^…[0-9a-f]{6,}$/);
    expect(errors).toEqual([]);
  });

  it("should edit a receiver's transform on its page, try it on a sample (what would be sent, or the error and its line), and save it", async () => {
    const { page, errors } = browser;
    expect((await service.api('/v1/receivers/shaped', { method: 'PUT', json: { url: `${receiver.url}/shaped` } })).status).toBe(201);
    await openLoggedIn('#/receiver/shaped');
    await page.waitForSelector('#transform-code');
    expect(await page.textContent('#transform-status')).toContain('No transform');
    const code = "function handler(webhook) {\n  webhook.body = { text: 'paid ' + webhook.body.data.amount };\n  return webhook;\n}";
    await page.fill('#transform-code', code);
    await page.click('[data-action=try-transform]');
    await waitShowing(page, '#transform-result[data-result=send]', '#transform');
    const shown = await page.textContent('#transform-result');
    expect(shown).toContain(`POST ${receiver.url}/shaped`);
    expect(shown).toContain('{"text":"paid 1500"}');
    expect(shown).toMatch(/webhook-signature: v1,/);

    await page.fill('#transform-code', 'function handler(webhook) {\n  return webhook.body.nothing.here;\n}');
    await page.click('[data-action=try-transform]');
    await waitShowing(page, '#transform-result[data-result=error]', '#transform');
    expect(await page.textContent('#transform-result')).toMatch(/^Error at line 2:\d+: TypeError: /);
    expect((await service.apiJson('/v1/receivers/shaped')).transform).toBeNull(); // tried, not saved

    await page.fill('#transform-code', code);
    await page.click('[data-action=save-transform]');
    await page.waitForSelector('p.flash:text("Transform saved.")');
    expect((await service.apiJson('/v1/receivers/shaped')).transform).toEqual({ code });
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-transform.png`, fullPage: true });
    await page.click('[data-action=remove-transform]');
    await page.waitForSelector('p.flash:text("Transform removed.")');
    expect((await service.apiJson('/v1/receivers/shaped')).transform).toBeNull();
    expect(errors).toEqual([]);
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalPagesController } from '../../src/portal/portal-pages.controller.js';
import { openBrowser, SCREENSHOTS, waitShowing } from '../support/browser.js';
import { Receiver } from '../support/receiver.js';
import { jsonOf, startTestService, waitFor, type TestService } from '../support/service.js';

type Browser = Awaited<ReturnType<typeof openBrowser>>;
/* eslint-disable @typescript-eslint/no-explicit-any -- page functions run in the browser; this project compiles without the DOM lib */

/** A second local site: a page of the sender's app that embeds `src` in an iframe (its origin differs from the service's by the port). */
async function embeddingSite(): Promise<{ origin: string; page: (src: string) => string; close: () => Promise<void> }> {
  let src = '';
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Sender app</title><h1>Sender app: webhooks</h1><iframe id="portal" src="${src}" width="1300" height="760"></iframe>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    page: (url) => {
      src = url;
      return `${origin}/settings/webhooks`;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe(PortalPagesController.name, () => {
  let service: TestService;
  let receiver: Receiver;
  let browser: Browser;
  let allowed: Awaited<ReturnType<typeof embeddingSite>>;
  let refused: Awaited<ReturnType<typeof embeddingSite>>;
  const failedIds: string[] = [];

  const arrivalsOf = (id: string) => receiver.requests.filter((r) => r.headers['webhook-id'] === id).length;
  const mint = async (name: string, capabilities: string[]) =>
    (await jsonOf(await service.api(`/v1/receivers/${name}/portal-sessions`, { method: 'POST', json: { capabilities, ttlSeconds: 900 } }))) as {
      url: string;
    };

  beforeAll(async () => {
    [allowed, refused, receiver, browser] = await Promise.all([embeddingSite(), embeddingSite(), Receiver.start(), openBrowser()]);
    service = await startTestService({ portalFrameAncestors: [allowed.origin], transformTimeoutMs: 1000 });
    // each delivery fails its first attempt (one attempt allowed), and succeeds when sent again
    expect(
      (await service.api('/v1/receivers/shop', { method: 'PUT', json: { url: `${receiver.url}/shop?failTimes=1&failCode=500`, maxAttempts: 1 } })).status,
    ).toBe(201);
    expect((await service.api('/v1/receivers/other', { method: 'PUT', json: { url: `${receiver.url}/other?code=500`, maxAttempts: 1 } })).status).toBe(201);
    const batch = await service.apiJson('/v1/batches', {
      method: 'POST',
      json: {
        callbacks: [
          ...[1, 2, 3].map((n) => ({ receiver: 'shop', externalId: `order-${n}`, body: { order: n } })),
          { receiver: 'other', externalId: 'not-yours', body: {} },
        ],
      },
    });
    failedIds.push(...batch.callbacks.slice(0, 3).map((c: { id: string }) => c.id));
    await waitFor(async () => (await service.apiJson(`/v1/batches/${batch.id}`)).status === 'completed', 15_000);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.dispose();
    await Promise.all([receiver?.close(), allowed?.close(), refused?.close()]);
  });

  it("should open a session link without the token staying in the address bar, show the receiver's own deliveries, reveal and rotate its secret, and replay a failed delivery until it arrives", async () => {
    const { page, errors } = browser;
    const { url } = await mint('shop', ['replay', 'rotate']);
    const entries = () => page.evaluate(() => (globalThis as any).history.length as number);
    const before = await entries();
    await page.goto(url);
    await page.waitForSelector('#deliveries tbody tr');
    // the token's URL answered with a redirect: it is neither shown nor an entry of the history
    expect(page.url()).toBe(`${service.url}/portal`);
    expect(await entries()).toBe(before + 1);
    expect(await page.textContent('#receiver-name')).toBe('shop');
    const rows = await page.$$eval('#deliveries tbody tr', (trs) => trs.map((tr: any) => tr.textContent));
    expect(rows).toHaveLength(3);
    expect(rows.join()).not.toMatch(/not-yours/);
    expect(rows.every((r) => r.includes('failed'))).toBe(true);
    // read only, its cookie is not readable by the page's scripts
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe('');
    await page.screenshot({ path: `${SCREENSHOTS}/portal.png`, fullPage: true });

    const secretsOf = async () => (await service.apiJson('/v1/receivers/shop')).secrets.map((s: { secret: string }) => s.secret) as string[];
    const [current] = await secretsOf();
    expect(await page.textContent('#secrets')).not.toContain(current);
    await page.click('[data-action=reveal]');
    await page.waitForSelector('#secret-list');
    expect(await page.textContent('#secret-list')).toContain(current);
    await page.click('[data-action=rotate]');
    await page.click('dialog.confirm [data-confirm=yes]');
    await page.waitForSelector('p.flash');
    const rotated = await secretsOf();
    expect(rotated).toHaveLength(2);
    expect(rotated[1]).toBe(current);
    await page.click('[data-action=reveal]');
    await page.waitForSelector('#secret-list');
    expect(await page.$$eval('#secret-list tbody tr', (trs) => trs.length)).toBe(2);
    expect(await page.textContent('#secret-list')).toContain(rotated[0]);

    const [first] = failedIds;
    expect(arrivalsOf(first)).toBe(1);
    await page.click(`tr[data-delivery="${first}"] [data-action=replay]`);
    await page.click('dialog.confirm [data-confirm=yes]');
    await waitFor(() => arrivalsOf(first) === 2, 10_000);
    await waitFor(async () => (await service.apiJson(`/v1/callbacks/${first}`)).status === 'succeeded', 10_000);
    await page.reload();
    await page.waitForSelector(`tr[data-delivery="${first}"] .status.succeeded`);
    // signed with the new secret and the old one, as the receiver got it
    const sent = receiver.requests.filter((r) => r.headers['webhook-id'] === first)[1];
    expect(String(sent.headers['webhook-signature']).split(' ')).toHaveLength(2);

    await page.click(`tr[data-delivery="${first}"] a`);
    await page.waitForSelector('section.attempt[data-attempt="2"]');
    const request = await page.textContent('section.attempt[data-attempt="2"] pre.request');
    expect(request).toContain(`webhook-id: ${first}`);
    expect(request).toMatch(/webhook-signature: v1,\S+ v1,\S+/);
    expect(request).toContain('{"order":1}');
    await page.screenshot({ path: `${SCREENSHOTS}/portal-delivery.png`, fullPage: true });
    expect(errors).toEqual([]);
  });

  it('should replay all failed deliveries since a time, each once more, and send a test whose result shows at once', async () => {
    const { page, errors } = browser;
    const { url } = await mint('shop', ['replay']);
    await page.goto(url);
    await page.waitForSelector('[data-action=replay-failed]');
    const rest = failedIds.slice(1);
    expect(rest.map(arrivalsOf)).toEqual([1, 1]);
    await page.selectOption('#replay-window', '1h');
    await page.click('[data-action=replay-failed]');
    await page.click('dialog.confirm [data-confirm=yes]');
    await waitFor(() => rest.every((id) => arrivalsOf(id) === 2), 10_000);
    // the page is drawn again once all it sent again settled, with the outcome on top
    await page.waitForSelector('p.flash:text("Replayed 2 failed deliveries: 2 delivered, 0 failed again, 0 pending.")');
    await page.selectOption('#filter-status', 'failed');
    await waitFor(async () => (await page.$$('#deliveries tbody tr')).length === 0, 10_000);
    expect(rest.map(arrivalsOf)).toEqual([2, 2]);

    const before = receiver.requests.length;
    await page.click('[data-action=send-test]');
    await page.waitForSelector('#test-result .status');
    const test = receiver.requests.slice(before).find((r) => r.body.includes('portal.test'));
    expect(test?.headers['webhook-signature']).toMatch(/^v1,/);
    // the receiver fails a first attempt with 500 and a test has one
    expect(await page.textContent('#test-result')).toMatch(/failed\s+500/);
    await page.screenshot({ path: `${SCREENSHOTS}/portal-replayed.png`, fullPage: true });
    expect(errors).toEqual([]);
  });

  it('should let a receiver with edit try and save its own transform, and show none without edit', async () => {
    const { page, errors } = browser;
    await page.goto((await mint('shop', ['read'])).url);
    await page.waitForSelector('#secrets');
    expect(await page.$('#transform-code')).toBeNull();

    await page.goto((await mint('shop', ['edit'])).url);
    await page.waitForSelector('#transform-code');
    await page.fill('#transform-code', "function handler(webhook) {\n  webhook.headers['x-portal'] = 'set';\n  return webhook;\n}");
    await page.click('[data-action=try-transform]');
    await waitShowing(page, '#transform-result[data-result=send]', '#transform');
    expect(await page.textContent('#transform-result')).toContain('x-portal: set');
    await page.fill('#transform-payload', '{"order": 5}');
    await page.fill('#transform-code', 'function handler(webhook) {\n  return webhook.body.order < 10 ? null : webhook;\n}');
    await page.click('[data-action=try-transform]');
    await waitShowing(page, '#transform-result[data-result=cancel]', '#transform');
    await page.click('[data-action=save-transform]');
    await page.waitForSelector('p.flash:text("Transform saved.")');
    expect((await service.apiJson('/v1/receivers/shop')).transform.code).toContain('webhook.body.order < 10');
    await page.click('[data-action=remove-transform]');
    await page.waitForSelector('p.flash:text("Transform removed.")');
    expect((await service.apiJson('/v1/receivers/shop')).transform).toBeNull();
    expect(errors).toEqual([]);
  });

  it("should make a portal link from the dashboard's receiver page, copy it, and open the portal with the capabilities ticked", async () => {
    const { page, context, errors } = browser;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.url });
    await page.goto(`${service.url}/dashboard`);
    await page.evaluate((key) => (globalThis as any).sessionStorage.setItem('callbacks.apiKey', key), service.key);
    // as the dashboard's own test does: a load with the key already in sessionStorage (leaving the
    // page first, so the address that differs only by its hash loads it again rather than changing the hash)
    await page.goto('about:blank');
    await page.goto(`${service.url}/dashboard#/receiver/shop`);
    await page.waitForSelector('[data-action=portal-link]');
    await page.check('input[data-capability=edit]');
    await page.selectOption('#portal-ttl', '86400');
    await page.click('[data-action=portal-link]');
    await page.waitForSelector('#portal-url');
    const url = await page.inputValue('#portal-url');
    expect(url.startsWith(`${service.url}/portal/session?token=cbp_`)).toBe(true);
    expect(await page.textContent('#portal-link')).toMatch(/read, edit; until /);
    await page.click('[data-action=portal-copy]');
    await page.waitForSelector('[data-action=portal-copy]:text("Copied")');
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(url);
    await page.screenshot({ path: `${SCREENSHOTS}/portal-dashboard-link.png`, fullPage: true });
    expect(errors).toEqual([]);

    await page.goto(url);
    await page.waitForSelector('#edit-url');
    expect(await page.textContent('header nav')).toMatch(/read, edit/);
    expect(await page.locator('[data-action=rotate], [data-action=send-test], [data-action=replay-failed]').count()).toBe(0);
    // edit: headers saved through the portal reach the receiver's settings
    await page.fill('#edit-headers', 'x-shop: 7');
    await page.click('[data-action=save-settings]');
    await waitFor(async () => (await service.apiJson('/v1/receivers/shop')).headers['x-shop'] === '7', 5_000);
    expect(errors).toEqual([]);
  });

  it('should load inside an iframe of an origin PORTAL_FRAME_ANCESTORS allows', async () => {
    const { page } = browser;
    const res = await service.api('/v1/receivers/shop/portal-sessions', { method: 'POST', json: { theme: { '--accent': 'rgb(1, 2, 3)' } } });
    const { url } = await jsonOf(res);
    await page.goto(allowed.page(url));
    const frame = page.frameLocator('#portal');
    await frame.locator('#deliveries tbody tr').first().waitFor({ timeout: 15_000 });
    expect(await frame.locator('#receiver-name').textContent()).toBe('shop');
    // the session's theme: its CSS variables colour the page
    expect(
      await frame
        .locator('#deliveries a')
        .first()
        .evaluate((a) => (globalThis as any).getComputedStyle(a).color),
    ).toBe('rgb(1, 2, 3)');
    // read only: no replay, rotate or edit controls
    expect(await frame.locator('[data-action=replay], [data-action=rotate], [data-action=send-test]').count()).toBe(0);
    await page.screenshot({ path: `${SCREENSHOTS}/portal-embedded.png` });
  });

  it('should be refused inside an iframe of any other origin', async () => {
    const { page } = browser;
    const { url } = await mint('shop', []);
    const violation = page.waitForEvent('console', { predicate: (m) => /frame-ancestors/.test(m.text()), timeout: 15_000 });
    await page.goto(refused.page(url));
    expect((await violation).text()).toContain(
      `Framing '${service.url}/' violates the following Content Security Policy directive: "frame-ancestors ${allowed.origin}"`,
    );
    expect(await page.frameLocator('#portal').locator('#receiver-name').count()).toBe(0);
    await page.screenshot({ path: `${SCREENSHOTS}/portal-embed-refused.png` });
  });
});

import diagnostics from 'node:diagnostics_channel';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONNECT_TIMINGS } from '../src/dispatch/transport/connector.js';
import { connect } from './support/database.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * The worker's JIT warm-up at boot (SenderService.warmUp): WARM_UP_CALLS made-up
 * callbacks through the whole pipeline to a throw-away loopback server, leaving no
 * trace in the database or the metrics, and no way through the network policy.
 */
describe('worker warm-up', () => {
  const WARM_UP_CALLS = 450;
  let service: TestService;
  let db: pg.Client;
  const origins = new Map<string, number>();
  const onCreate = (message: unknown) => {
    const { request } = message as { request: { origin: string; path: string } };
    origins.set(`${request.origin}${request.path}`, (origins.get(`${request.origin}${request.path}`) ?? 0) + 1);
  };
  /** Per connection the warm-ups opened: whether the guarded connector made it (it stamps its timings on the socket). */
  const guarded: boolean[] = [];
  const onConnected = (message: unknown) => {
    const { socket } = message as { socket: object };
    guarded.push(CONNECT_TIMINGS in socket);
  };

  beforeAll(async () => {
    diagnostics.subscribe('undici:request:create', onCreate);
    diagnostics.subscribe('undici:client:connected', onConnected);
    try {
      service = await startTestService({ warmUpCalls: WARM_UP_CALLS });
    } finally {
      diagnostics.unsubscribe('undici:request:create', onCreate);
      diagnostics.unsubscribe('undici:client:connected', onConnected);
    }
    db = await connect(service.databaseUrl);
  });
  afterAll(async () => {
    await db?.end();
    await service?.dispose();
  });

  it('should send WARM_UP_CALLS signed calls to its own loopback server before the worker starts', () => {
    // The transport's own warm-up (24 calls) and the send path's, each to a server of its own on 127.0.0.1.
    const counts = [...origins].filter(([url]) => /^http:\/\/127\.0\.0\.1:\d+\/$/.test(url)).map(([, n]) => n);
    expect(counts).toContain(WARM_UP_CALLS);
  });

  it('should connect through the connector real calls use, so the warm-up runs the code they run', () => {
    // With undici's default connector the sockets had other shapes, and V8 compiled
    // the send path again for the first real connections.
    expect(guarded.length).toBeGreaterThan(0);
    expect(guarded.every(Boolean)).toBe(true);
  });

  it('should leave no callback, attempt, batch or host row, and no attempt in the metrics', async () => {
    for (const table of ['callback', 'attempt', 'batch', 'host']) {
      expect((await db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n, table).toBe(0);
    }
    const metrics = await (await service.api('/metrics')).text();
    expect(metrics).not.toMatch(/^callback_attempts_total\{/m);
    expect(metrics).toMatch(/^dispatch_written_rows_total 0$/m);
    // Series without labels are there from the start, at zero, as before any warm-up.
    expect(metrics).toMatch(/^dispatch_writeback_duration_seconds_count 0$/m);
  });
});

import { AppConfig } from '../../src/config/app.config.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { CaughtErrors } from '../../src/logging/caught-errors.js';
import { ApiDatabase } from '../../src/database/api-database.js';
import { directTarget } from '../../src/database/database.target.js';
import { DueNotifier } from '../../src/database/due.notifier.js';
import { DUE_CHANNEL, duePriority } from '../../src/database/notify.listener.js';
import { PrismaService } from '../../src/database/prisma.service.js';
import { connect, createTestDatabase } from '../support/database.js';
import { waitFor } from '../support/service.js';

/** A NOTIFY of the test's own on the same channel, after the notifier's. */
const MARKER = 'marker';

describe(DueNotifier.name, () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let prisma: PrismaService;
  let api: ApiDatabase;
  let listener: pg.Client;
  let received = 0;
  const payloads: string[] = [];
  let markers = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    prisma = new PrismaService(directTarget(db.url), new CaughtErrors(), new AppConfig());
    api = new ApiDatabase(prisma, directTarget(db.url), new AppConfig());
    listener = await connect(db.url);
    listener.on('notification', (n) => {
      if (n.channel !== DUE_CHANNEL) return;
      if (n.payload === MARKER) return void markers++;
      received++;
      payloads.push(n.payload ?? '');
    });
    await listener.query(`LISTEN ${DUE_CHANNEL}`);
  });

  /**
   * Every NOTIFY the notifier sent has arrived: notifications come in the order their
   * transactions committed, and the test's own marker is sent after `settled()`, when the
   * notifier has nothing more to send.
   */
  const allArrived = async () => {
    const expected = markers + 1;
    await listener.query(`NOTIFY ${DUE_CHANNEL}, '${MARKER}'`);
    await waitFor(() => markers >= expected, 5_000, 5);
  };

  afterAll(async () => {
    await listener.end();
    await prisma.onApplicationShutdown();
    await db.drop();
  });

  it('should coalesce a burst of requests into one NOTIFY now and exactly one after it', async () => {
    received = 0;
    const notifier = new DueNotifier(api, new CaughtErrors());
    for (let i = 0; i < 100; i++) notifier.notifyDue();
    await notifier.settled();
    await allArrived();
    expect(received).toBe(2);
  });

  it('should name the highest priority of the requests each NOTIFY stands for', async () => {
    received = 0;
    payloads.length = 0;
    const notifier = new DueNotifier(api, new CaughtErrors());
    notifier.notifyDue(2); // goes at once
    for (const p of [2, 1, 2]) notifier.notifyDue(p); // coalesced into the one after it
    await notifier.settled();
    await waitFor(() => received >= 2, 5_000, 10);
    notifier.notifyDue(); // unknown: any priority
    await notifier.settled();
    await waitFor(() => received >= 3, 5_000, 10);
    expect(payloads).toEqual(['2', '1', '0']);
    expect(payloads.map(duePriority)).toEqual([2, 1, 0]);
    expect([undefined, '', 'x', '-1'].map(duePriority)).toEqual([0, 0, 0, 0]);
  });

  it('should notify again for a request made after the previous NOTIFY went out', async () => {
    received = 0;
    const notifier = new DueNotifier(api, new CaughtErrors());
    notifier.notifyDue();
    await notifier.settled();
    await waitFor(() => received >= 1, 5_000, 10);
    notifier.notifyDue();
    await notifier.settled();
    await allArrived();
    expect(received).toBe(2);
  });
});

import { randomBytes } from 'node:crypto';
import { CLOCK_MARGIN_MS } from './clock.js';

let lastMs = 0;
let counter = 0;
const COUNTER_BITS = 30;

/**
 * Random bytes are taken from a pool refilled 4 KiB at a time: one `randomBytes`
 * call (a system call) per id cost ~4% of the ingest CPU for batches of 1,000
 * (`npm run bench:ingest`). Each byte of the pool is handed out once.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;
function takeRandom(n: number): Buffer {
  if (poolAt + n > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  poolAt += n;
  return pool.subarray(poolAt - n, poolAt);
}

/**
 * UUIDv7 (RFC 9562) with a 30-bit counter after the millisecond timestamp (the
 * RFC's "fixed-length dedicated counter" method), so ids made by one process are
 * strictly increasing. Time-ordered ids keep the primary-key B-tree append-mostly
 * on large ingests, make id order a stable listing cursor, and put the callbacks
 * of a batch in request order.
 */
export function uuidv7(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    counter = takeRandom(4).readUInt32BE() >>> (32 - COUNTER_BITS + 1); // start low: room to count
  } else if (++counter >= 2 ** COUNTER_BITS) {
    lastMs++;
    counter = 0;
  }
  const b = takeRandom(16);
  b.writeUIntBE(lastMs, 0, 6);
  b[6] = 0x70 | ((counter >>> 26) & 0x0f);
  b[7] = (counter >>> 18) & 0xff;
  b[8] = 0x80 | ((counter >>> 12) & 0x3f);
  b[9] = (counter >>> 4) & 0xff;
  b[10] = ((counter & 0x0f) << 4) | (b[10] & 0x0f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The lowest id a row stored (by Postgres's clock) at or after `at` can have: its id was made by the API's clock, which may run behind (CLOCK_MARGIN_MS). */
export const idFloorOfStoredSince = (at: Date): string => uuidFloorOf(new Date(at.getTime() - CLOCK_MARGIN_MS));

/** The smallest UUIDv7 of a millisecond: ids are made at acceptance, so an id bound is a time bound the index walks. */
export function uuidFloorOf(at: Date): string {
  const hex = Math.max(0, Math.min(at.getTime(), 2 ** 48 - 1))
    .toString(16)
    .padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID_RE.test(s);

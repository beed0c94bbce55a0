import { AxiosError, AxiosHeaders, type AxiosAdapter, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import diagnostics from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { Agent, request as undiciRequest } from 'undici';
import { TIMEOUT_CODE } from '../outcome.policy.js';
import { CONNECT_TIMINGS, type ConnectTimings, type TimedSocket } from './connector.js';

/** Where one call's time went, milliseconds from its start. */
export interface CallTrace {
  startedAt: Date;
  durationMs: number;
  dnsMs?: number;
  connectMs?: number;
  tlsMs?: number;
  firstByteMs?: number;
}

/** Axios request options this adapter reads beyond the standard ones. */
export interface TracedRequestConfig {
  /** Bytes of the response body to keep; the rest is read and dropped. */
  snippetBytes?: number;
}

/** A body larger than this is not drained: the connection is closed instead. */
const MAX_DRAIN_BYTES = 1 << 20;

/** Raw clock readings of one call (performance.now()), filled in as it goes. */
interface CallClock {
  /** When the adapter was asked to send. */
  asked: number;
  /** When undici wrote the request headers to the socket. */
  sent?: number;
  /** Phases of the connection this call opened, if it opened one. */
  connect?: ConnectTimings;
}

// Links undici's internal request objects to our clocks. Request creation happens
// synchronously inside `undiciRequest`, so the clock being started is in `starting`.
let starting: CallClock | undefined;
const clocks = new WeakMap<object, CallClock>();
diagnostics.subscribe('undici:request:create', (message) => {
  if (starting) clocks.set((message as { request: object }).request, starting);
});
diagnostics.subscribe('undici:client:sendHeaders', (message) => {
  const { request, socket } = message as { request: object; socket: TimedSocket };
  const clock = clocks.get(request);
  if (!clock) return;
  clock.sent = performance.now();
  // The first request on a new socket is the one that waited for it to connect.
  const timings = socket[CONNECT_TIMINGS];
  if (timings?.unclaimed) {
    timings.unclaimed = false;
    clock.connect = timings;
  }
});

/**
 * Turns clock readings into the recorded trace. The call is timed from the moment
 * its bytes went out (less the connection phases it waited for), not from when
 * the dispatcher asked: a busy event loop between the two is our own delay, not
 * the receiver's latency, and must not show up in its history.
 */
function toTrace(clock: CallClock, headersAt: number | undefined, end: number, timedOut = false): CallTrace {
  const c = clock.connect;
  const connectTotal = c ? c.dnsMs + c.connectMs + (c.tlsMs ?? 0) : 0;
  // A timeout is counted from when it was armed, on ask: a call cut off by its
  // timeout records that timeout, never less.
  const start = clock.sent !== undefined && !timedOut ? clock.sent - connectTotal : clock.asked;
  const trace: CallTrace = { startedAt: new Date(performance.timeOrigin + start), durationMs: round(end - start) };
  if (clock.sent !== undefined) {
    trace.dnsMs = c ? round(c.dnsMs) : 0;
    trace.connectMs = c ? round(c.connectMs) : 0;
    if (c?.tlsMs !== undefined) trace.tlsMs = round(c.tlsMs);
  }
  if (headersAt !== undefined) trace.firstByteMs = round(headersAt - start);
  return trace;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * An axios adapter that sends through an undici Agent, so HttpService keeps its
 * API while calls go out at undici speed. It enforces `config.timeout` over the
 * whole call (headers and body), never follows redirects, keeps a capped snippet of
 * the body, and returns the phase timings as `response.request` (on errors as
 * `error.request`), since axios has no other slot for them.
 */
export function undiciAdapter(agent: Agent): AxiosAdapter {
  return async (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
    const snippetBytes = (config as TracedRequestConfig).snippetBytes ?? 1024;
    const clock: CallClock = { asked: performance.now() };
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    if (config.timeout && config.timeout > 0) {
      timer = setTimeout(() => controller.abort(timeoutError(config.timeout!)), config.timeout);
    }
    try {
      starting = clock;
      const pending = undiciRequest(config.url!, {
        dispatcher: agent,
        method: (config.method ?? 'get').toUpperCase() as 'POST',
        headers: flatHeaders(config.headers),
        body: config.data as string | Buffer | undefined,
        signal: controller.signal,
      } as Parameters<typeof undiciRequest>[1]);
      starting = undefined;
      const res = await pending;
      const headersAt = performance.now();
      const snippet = await readSnippet(res.body, snippetBytes);
      return {
        status: res.statusCode,
        statusText: '',
        headers: res.headers as AxiosResponse['headers'],
        data: snippet,
        config,
        request: toTrace(clock, headersAt, performance.now()),
      };
    } catch (error) {
      starting = undefined;
      const trace = toTrace(clock, undefined, performance.now(), controller.signal.aborted);
      const cause = controller.signal.aborted ? (controller.signal.reason as Error) : (error as Error);
      const code = (cause as { code?: string }).code;
      throw new AxiosError(cause.message || code || 'request failed', code, config, trace);
    } finally {
      clearTimeout(timer);
    }
  };
}

function timeoutError(ms: number): Error {
  return Object.assign(new Error(`no complete response within ${ms} ms`), { code: TIMEOUT_CODE });
}

function flatHeaders(headers: InternalAxiosRequestConfig['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(AxiosHeaders.from(headers).toJSON())) {
    if (v !== undefined && v !== null) out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  return out;
}

/** Keeps the first `limit` bytes; drains the rest so the connection is reused. */
async function readSnippet(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let seen = 0;
  for await (const chunk of body) {
    seen += chunk.length;
    if (keptBytes < limit) {
      const part = chunk.subarray(0, limit - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (seen > MAX_DRAIN_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(kept).toString('utf8');
}

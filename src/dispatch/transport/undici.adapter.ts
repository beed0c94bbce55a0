import { AxiosError, AxiosHeaders, type AxiosAdapter, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import diagnostics from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { Agent, request as undiciRequest } from 'undici';
import { TIMEOUT_CODE } from '../outcome.policy.js';
import { CONNECT_TIMINGS, type TimedSocket } from './connector.js';

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

// Links undici's internal request objects to our traces. Request creation happens
// synchronously inside `undiciRequest`, so the trace being started is in `starting`.
let starting: CallTrace | undefined;
const traces = new WeakMap<object, CallTrace>();
diagnostics.subscribe('undici:request:create', (message) => {
  if (starting) traces.set((message as { request: object }).request, starting);
});
diagnostics.subscribe('undici:client:sendHeaders', (message) => {
  const { request, socket } = message as { request: object; socket: TimedSocket };
  const trace = traces.get(request);
  const timings = socket[CONNECT_TIMINGS];
  // The first request on a new socket is the one that waited for it to connect.
  if (!trace) return;
  if (timings?.unclaimed) {
    timings.unclaimed = false;
    trace.dnsMs = round(timings.dnsMs);
    trace.connectMs = round(timings.connectMs);
    if (timings.tlsMs !== undefined) trace.tlsMs = round(timings.tlsMs);
  } else {
    // A reused keep-alive connection: no lookup, connect or handshake happened.
    trace.dnsMs = 0;
    trace.connectMs = 0;
  }
});

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
    const trace: CallTrace = { startedAt: new Date(), durationMs: 0 };
    const t0 = performance.now();
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    if (config.timeout && config.timeout > 0) {
      timer = setTimeout(() => controller.abort(timeoutError(config.timeout!)), config.timeout);
    }
    try {
      starting = trace;
      const pending = undiciRequest(config.url!, {
        dispatcher: agent,
        method: (config.method ?? 'get').toUpperCase() as 'POST',
        headers: flatHeaders(config.headers),
        body: config.data as string | Buffer | undefined,
        signal: controller.signal,
      } as Parameters<typeof undiciRequest>[1]);
      starting = undefined;
      const res = await pending;
      trace.firstByteMs = round(performance.now() - t0);
      const snippet = await readSnippet(res.body, snippetBytes);
      trace.durationMs = round(performance.now() - t0);
      return {
        status: res.statusCode,
        statusText: '',
        headers: res.headers as AxiosResponse['headers'],
        data: snippet,
        config,
        request: trace,
      };
    } catch (error) {
      starting = undefined;
      trace.durationMs = round(performance.now() - t0);
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

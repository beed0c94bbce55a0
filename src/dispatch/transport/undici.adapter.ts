import { AxiosError, AxiosHeaders, type AxiosAdapter, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import diagnostics from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import type { Agent, Dispatcher } from 'undici';
import { TIMEOUT_CODE } from '../outcome.policy.js';
import { directAdapter } from './dispatch.axios.js';
import { CONNECT_TIMINGS, type ConnectTimings, type TimedSocket } from './connector.js';
import { SettleQueue } from './settle.queue.js';

/** Where one call's time went, milliseconds from its start. */
export interface CallTrace {
  startedAt: Date;
  durationMs: number;
  dnsMs?: number;
  connectMs?: number;
  tlsMs?: number;
  /** Through EGRESS_PROXY_URL, on a call that opened its tunnel: the CONNECT exchange. */
  tunnelMs?: number;
  firstByteMs?: number;
}

/** Axios request options this adapter reads beyond the standard ones. */
export interface TracedRequestConfig {
  /** Bytes of the response body to keep; the rest is read and dropped. */
  snippetBytes?: number;
}

/** A body larger than this is not drained: the connection is closed instead. */
const MAX_DRAIN_BYTES = 1 << 20;

/** Calls are timed as their answers are read, and settled a slice per turn (see SettleQueue). */
const settling = new SettleQueue();

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
// synchronously inside `agent.dispatch`, so the clock being started is in `starting`.
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
function toTrace(clock: CallClock, headersAt: number | undefined, end: number, timedOutMs = 0): CallTrace {
  const c = clock.connect;
  const connectTotal = c ? c.dnsMs + c.connectMs + (c.tunnelMs ?? 0) + (c.tlsMs ?? 0) : 0;
  // A call cut off by its timeout records exactly that timeout, counted from when it
  // was armed, on ask: if the timer fired late (the event loop was busy), the rest is ours.
  const start = clock.sent !== undefined && !timedOutMs ? clock.sent - connectTotal : clock.asked;
  const durationMs = timedOutMs || end - start;
  // Wall time from the wall clock now, less the monotonic time since the start: timeOrigin +
  // start drifts from the wall clock over a long-lived process (attempts stamped before their callback was accepted).
  const trace: CallTrace = { startedAt: new Date(Date.now() - (performance.now() - start)), durationMs: round(durationMs) };
  if (clock.sent !== undefined) {
    trace.dnsMs = c ? round(c.dnsMs) : 0;
    trace.connectMs = c ? round(c.connectMs) : 0;
    if (c?.tlsMs !== undefined) trace.tlsMs = round(c.tlsMs);
    if (c?.tunnelMs !== undefined) trace.tunnelMs = round(c.tunnelMs);
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
 *
 * It talks to the Agent's dispatch interface directly, with one handler object per
 * call: no response stream, no AbortSignal, no async iteration of the body. Those
 * cost more per call than everything else the adapter does (measured with
 * bench/transport.bench.mjs).
 */
export function undiciAdapter(agent: Agent): AxiosAdapter {
  return directAdapter(
    (config: InternalAxiosRequestConfig) =>
      new Promise<AxiosResponse>((resolve, reject) => {
        const call = new Call(config, resolve, reject);
        const url = originAndPath(config.url!);
        starting = call.clock;
        try {
          agent.dispatch(
            {
              origin: url.origin,
              path: url.path,
              method: (config.method ?? 'get').toUpperCase() as Dispatcher.HttpMethod,
              headers: plainHeaders(config.headers),
              body: config.data as string | Buffer | undefined,
            },
            call,
          );
        } catch (error) {
          call.onResponseError(undefined, error as Error);
        } finally {
          starting = undefined;
        }
      }),
  );
}

/** Parsed URLs by their text: callbacks repeat their URLs, and parsing one allocates a URL object and its parts. */
const parsedUrls = new Map<string, { origin: string; path: string }>();
const PARSED_URLS_KEPT = 10_000;

/** `url`'s origin and path with query, as `new URL` gives them (it throws on an invalid URL, as before). */
function originAndPath(url: string): { origin: string; path: string } {
  let parsed = parsedUrls.get(url);
  if (!parsed) {
    const u = new URL(url);
    parsed = { origin: u.origin, path: u.pathname + u.search };
    if (parsedUrls.size >= PARSED_URLS_KEPT) parsedUrls.clear();
    parsedUrls.set(url, parsed);
  }
  return parsed;
}

/** Headers as undici takes them: axios's AxiosHeaders on its whole path, the caller's own object on the direct one. */
function plainHeaders(headers: unknown): Record<string, string> | undefined {
  if (headers instanceof AxiosHeaders) return headers.toJSON(true) as Record<string, string>;
  return headers as Record<string, string> | undefined;
}

/** One call in flight: undici's handler for it, and the promise it settles once. */
class Call implements Dispatcher.DispatchHandler {
  readonly clock: CallClock = { asked: performance.now() };
  private controller?: Dispatcher.DispatchController;
  private readonly timer?: NodeJS.Timeout;
  private settled = false;
  /** The timeout that cut this call off, ms; 0 while it has not. */
  private timedOut = 0;
  private status = 0;
  private headers: Record<string, string | string[] | undefined> = {};
  private headersAt?: number;
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  private seen = 0;
  private readonly snippetBytes: number;

  constructor(
    private readonly config: InternalAxiosRequestConfig,
    private readonly resolve: (res: AxiosResponse) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.snippetBytes = (config as TracedRequestConfig).snippetBytes ?? 1024;
    const timeout = config.timeout ?? 0;
    if (timeout > 0) this.timer = setTimeout(() => this.timeOut(timeout), timeout);
  }

  private timeOut(ms: number): void {
    this.timedOut = ms;
    const error = Object.assign(new Error(`no complete response within ${ms} ms`), { code: TIMEOUT_CODE });
    // Settle now: the call may still wait for a connection, with no controller yet.
    this.onResponseError(undefined, error);
    this.controller?.abort(error);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error('call already settled'));
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.status = statusCode;
    this.headers = headers;
    this.headersAt = performance.now();
  }

  /** Keeps the first `snippetBytes` bytes; reads and drops the rest so the connection is reused. */
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.seen += chunk.length;
    if (this.keptBytes < this.snippetBytes) {
      const part = chunk.subarray(0, this.snippetBytes - this.keptBytes);
      this.kept.push(part);
      this.keptBytes += part.length;
    }
    if (this.seen > MAX_DRAIN_BYTES) {
      // Not worth reading on: answer with what we kept and close the connection.
      this.onResponseEnd();
      controller.abort(new Error('response body too large to drain'));
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    const end = performance.now();
    const response: AxiosResponse = {
      status: this.status,
      statusText: '',
      headers: this.headers as AxiosResponse['headers'],
      data: snippetText(this.kept),
      config: this.config,
      request: toTrace(this.clock, this.headersAt, end),
    };
    settling.push(() => this.resolve(response));
  }

  onResponseError(_c: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    const trace = toTrace(this.clock, undefined, performance.now(), this.timedOut);
    const code = (error as { code?: string }).code;
    const failure = new AxiosError(error.message || code || 'request failed', code, this.config, trace);
    settling.push(() => this.reject(failure));
  }
}

/** The kept bytes as text Postgres can store: NUL, which text cannot hold, becomes U+FFFD. */
function snippetText(kept: Buffer[]): string {
  const text = (kept.length === 1 ? kept[0] : Buffer.concat(kept)).toString('utf8');
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

import { HttpService } from '@nestjs/axios';
import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AxiosAdapter, AxiosError, AxiosRequestConfig } from 'axios';
import { Agent, type buildConnector } from 'undici';
import type { Outcome } from '../../common/states.js';
import { AppConfig } from '../../config/app.config.js';
import { classifyError, classifyStatus } from '../outcome.policy.js';
import { traceAttempt } from '../dispatch.tracing.js';
import { tracing } from '../../tracing/tracing.setup.js';
import { buildGuardedConnector } from './connector.js';
import { NetworkPolicy } from './network.policy.js';
import { buildProxiedConnector } from './proxy.connector.js';
import { parseEgressProxy } from './proxy.tunnel.js';
import { undiciAdapter, type CallTrace, type TracedRequestConfig } from './undici.adapter.js';

export interface OutgoingCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
  timeoutMs: number;
  /** Trace context the attempt's span continues (the accepting request's), if any. */
  traceparent?: string | null;
}

export interface CallResult {
  outcome: Outcome;
  statusCode?: number;
  error?: string;
  responseHeaders?: Record<string, string>;
  responseBody?: string;
  retryAfter?: string;
  trace: CallTrace;
}

/** Response headers kept per attempt, and the longest value kept. */
const MAX_RESPONSE_HEADERS = 50;
const MAX_HEADER_VALUE = 512;
/** A new connection that takes longer than this is a connect_error. */
const CONNECT_TIMEOUT_MS = 10_000;
/** The one address the warm-up's agent may connect to: its own server's. */
const LOOPBACK_WARM_UP = '127.0.0.1/32';

/** The undici agent calls go through, on `connect` (guarded or proxied). */
function dispatchAgent(connect: buildConnector.connector): Agent {
  return new Agent({
    connect,
    // Per-destination limits are the dispatcher's job; the pool never queues.
    connections: null,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
}

/**
 * Sends one callback through HttpService. Remote failures are results, never
 * exceptions: whatever happens on the wire comes back as an outcome with timings.
 */
@Injectable()
export class HttpTransport implements OnApplicationShutdown {
  private readonly agent: Agent;
  private readonly adapter: AxiosAdapter;
  /** The warm-up's server while withLoopbackRoute runs: its URLs and the adapter that reaches them. */
  private loopback?: { prefix: string; adapter: AxiosAdapter };

  constructor(
    private readonly http: HttpService,
    private readonly config: AppConfig,
  ) {
    const policy = new NetworkPolicy(config.allowPrivateNetworks);
    this.agent = dispatchAgent(
      // With EGRESS_PROXY_URL every connection is a tunnel through the proxy, still to
      // an address our policy checked (proxy.connector.ts).
      config.egressProxyUrl
        ? buildProxiedConnector(policy, parseEgressProxy(config.egressProxyUrl), CONNECT_TIMEOUT_MS)
        : buildGuardedConnector(policy, CONNECT_TIMEOUT_MS),
    );
    this.adapter = undiciAdapter(this.agent);
  }

  /**
   * undici compiles its HTTP parser on first use (~40 ms) and the whole send path
   * runs cold once. A few calls through the same path to a throw-away server on
   * loopback (withLoopbackRoute) pay for that at boot, not in the first callback's
   * recorded duration.
   */
  async warmUp(): Promise<void> {
    await this.withLoopbackRoute(async (url) => {
      const call = { url, method: 'POST', headers: {}, body: 'warm-up', timeoutMs: 1000 };
      // Concurrent rounds: opening many connections at once has cold paths of its own.
      // sendCall, not send: no attempt spans for these.
      for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: 8 }, () => this.sendCall(call)));
    });
  }

  /**
   * Runs `use` with a throw-away HTTP server on loopback (answering 200 `ok`) at
   * `url`. While `use` runs, calls to that server's origin (and only those) go
   * through an agent of their own, whose policy admits 127.0.0.1 (the worker's, which
   * refuses loopback, stays as it is): the worker's warm-up sends its made-up
   * callbacks there before it claims anything (SenderService.warmUp). That agent is
   * built as the worker's is (dispatchAgent, the guarded connector), so the warm-up's
   * sockets, timers and parser states have the shapes the real calls' have: with
   * undici's default connector and timeouts, the first real connections had other
   * shapes, V8 dropped the code it had compiled for the send path and compiled it
   * again (~0.5 s on its helper threads) during the first 10,000 real calls
   * (bench/README.md, "the warm-up's sockets"). The server, the agent and the route
   * are gone when `use` settles.
   */
  async withLoopbackRoute(use: (url: string) => Promise<void>): Promise<void> {
    const server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = dispatchAgent(buildGuardedConnector(new NetworkPolicy([LOOPBACK_WARM_UP]), CONNECT_TIMEOUT_MS));
    const { port } = server.address() as AddressInfo;
    const origin = `http://127.0.0.1:${port}`;
    this.loopback = { prefix: `${origin}/`, adapter: undiciAdapter(agent) };
    try {
      await use(`${origin}/`);
    } finally {
      this.loopback = undefined;
      await agent.destroy().catch(() => undefined); // the warm-up's own agent: its calls are over
      server.closeAllConnections();
      server.close();
    }
  }

  private requestConfig(call: OutgoingCall, adapter: AxiosAdapter): AxiosRequestConfig & TracedRequestConfig {
    return {
      url: call.url,
      method: call.method,
      headers: call.headers,
      data: call.body ?? undefined,
      timeout: call.timeoutMs,
      adapter,
      snippetBytes: this.config.responseSnippetBytes,
    };
  }

  /** Sends one call; while tracing is on, as a client span whose traceparent the receiver gets. */
  send(call: OutgoingCall): Promise<CallResult> {
    const tracer = tracing.tracer;
    return tracer ? traceAttempt(tracer, call, (c) => this.sendCall(c)) : this.sendCall(call);
  }

  private async sendCall(call: OutgoingCall): Promise<CallResult> {
    const adapter = this.loopback && call.url.startsWith(this.loopback.prefix) ? this.loopback.adapter : this.adapter;
    try {
      const res = await this.http.axiosRef.request<string>(this.requestConfig(call, adapter));
      const headers = keepHeaders(res.headers as Record<string, unknown>);
      return {
        outcome: classifyStatus(res.status),
        statusCode: res.status,
        responseHeaders: headers,
        responseBody: res.data,
        retryAfter: headers['retry-after'],
        trace: res.request as CallTrace,
      };
    } catch (error) {
      const e = error as AxiosError;
      const trace = (e.request as CallTrace | undefined) ?? { startedAt: new Date(), durationMs: 0 };
      return { outcome: classifyError(e.code), error: `${e.code ?? 'ERROR'}: ${e.message}`.slice(0, 500), trace };
    }
  }

  /**
   * After the dispatcher drained (onModuleDestroy), close pooled connections. A call
   * still running then was handed back at the shutdown deadline, so it is cut off
   * rather than waited for: `close()` would wait for its own timeout (up to minutes).
   */
  async onApplicationShutdown(): Promise<void> {
    await this.agent.destroy().catch(() => undefined); // shutting down: calls still running were handed back
  }
}

function keepHeaders(raw: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  let n = 0;
  // for…in rather than Object.entries: no array of pairs per call.
  for (const k in raw) {
    if (n++ >= MAX_RESPONSE_HEADERS) break;
    const v = raw[k];
    const text = typeof v === 'string' ? v : Array.isArray(v) ? v.join(', ') : String(v);
    out[k] = text.length > MAX_HEADER_VALUE ? text.slice(0, MAX_HEADER_VALUE) : text;
  }
  return out;
}

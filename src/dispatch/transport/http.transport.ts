import { HttpService } from '@nestjs/axios';
import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import type { AxiosAdapter, AxiosError, AxiosRequestConfig } from 'axios';
import { Agent, type buildConnector } from 'undici';
import { AppConfig } from '../../config/app.config.js';
import { classifyError, classifyStatus } from '../outcome.policy.js';
import { traceAttempt } from '../dispatch.tracing.js';
import { tracing } from '../../tracing/tracing.setup.js';
import { AgentPools } from './agent.pools.js';
import { buildGuardedConnector, type ClientTls } from './connector.js';
import { NetworkPolicy } from '../../common/network.policy.js';
import { buildProxiedConnector } from './proxy.connector.js';
import { parseEgressProxy } from './proxy.tunnel.js';
import { undiciAdapter, type CallTrace, type TracedRequestConfig } from './undici.adapter.js';
import type { CallResult, OutgoingCall } from './call.js';

/** Response headers kept per attempt, and the longest value kept. */
const MAX_RESPONSE_HEADERS = 50;
const MAX_HEADER_VALUE = 512;
/** A new connection that takes longer than this is a connect_error. */
const CONNECT_TIMEOUT_MS = 10_000;

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
  /** Public addresses only; and, when ALLOW_PRIVATE_NETWORKS opens ranges, one that may also reach those. */
  private readonly agents: Agent[];
  private readonly publicAdapter: AxiosAdapter;
  private readonly privateAdapter: AxiosAdapter;
  /** ALLOW_PRIVATE_NETWORKS opens ranges: a call granted them goes through agents whose policy opens them. */
  private readonly opensPrivate: boolean;
  /** Receivers' own connections (mutual TLS), by their credentials and by the ranges they may reach. */
  private readonly pools: AgentPools;

  /**
   * The address check runs in the connector, on the addresses the socket connects to
   * (connector.ts), so which ranges a call may reach is chosen by the agent it goes
   * through: a call whose key is not granted private networks (or whose destination a
   * portal session chose, or that its receiver's transform sent to another destination:
   * transform.step.ts) goes through the agent whose policy opens nothing, whatever
   * ALLOW_PRIVATE_NETWORKS says. The two agents keep separate connection pools, so a
   * connection one opened is never reused by the other's calls; so do a receiver's own
   * (mutual TLS) pools, one per credentials and policy.
   */
  constructor(
    private readonly http: HttpService,
    private readonly config: AppConfig,
  ) {
    const open = config.allowPrivateNetworks;
    this.opensPrivate = open.length > 0;
    const publicOnly = new NetworkPolicy(
      [],
      this.opensPrivate
        ? "its key has no grant for private networks (an admin sets allowPrivateNetworks with PATCH /v1/keys/{id}), or a portal session chose its destination, or its receiver's transform sent it to another destination"
        : undefined,
    );
    const withPrivate = this.opensPrivate ? new NetworkPolicy(open) : publicOnly;
    const publicAgent = this.agentFor(publicOnly);
    const privateAgent = this.opensPrivate ? this.agentFor(withPrivate) : publicAgent;
    this.agents = [...new Set([publicAgent, privateAgent])];
    this.publicAdapter = undiciAdapter(publicAgent);
    this.privateAdapter = privateAgent === publicAgent ? this.publicAdapter : undiciAdapter(privateAgent);
    // a receiver's pool is its credentials' and one of the two policies': a connection one opened never serves the other's calls
    this.pools = new AgentPools((tls, privateNetworks) => this.agentFor(privateNetworks ? withPrivate : publicOnly, tls), config.receiverTlsPoolsMax);
  }

  private agentFor(policy: NetworkPolicy, tls?: ClientTls): Agent {
    return dispatchAgent(
      // With EGRESS_PROXY_URL every connection is a tunnel through the proxy, still to
      // an address our policy checked (proxy.connector.ts).
      this.config.egressProxyUrl
        ? buildProxiedConnector(policy, parseEgressProxy(this.config.egressProxyUrl), CONNECT_TIMEOUT_MS, tls)
        : buildGuardedConnector(policy, CONNECT_TIMEOUT_MS, tls),
    );
  }

  private requestConfig(call: OutgoingCall, snippetBytes = this.config.responseSnippetBytes): AxiosRequestConfig & TracedRequestConfig {
    const privateNetworks = this.opensPrivate && call.privateNetworks === true;
    return {
      url: call.url,
      method: call.method,
      headers: call.headers,
      data: call.body ?? undefined,
      timeout: call.timeoutMs,
      adapter: call.tls ? this.pools.adapterFor(call.tls, privateNetworks) : privateNetworks ? this.privateAdapter : this.publicAdapter,
      snippetBytes,
    };
  }

  /**
   * One request that is not a callback (an OAuth2 token request), through the same
   * connections, SSRF check (the ranges its `privateNetworks` allows), proxy and
   * timeouts as a callback, untraced; keeps up to `snippetBytes` of the answer.
   */
  request(call: OutgoingCall, snippetBytes: number): Promise<CallResult> {
    return this.sendCall(call, snippetBytes);
  }

  /** Sends one call; while tracing is on, as a client span whose traceparent the receiver gets. */
  send(call: OutgoingCall): Promise<CallResult> {
    const tracer = tracing.tracer;
    return tracer ? traceAttempt(tracer, call, (c) => this.sendCall(c)) : this.sendCall(call);
  }

  private async sendCall(call: OutgoingCall, snippetBytes?: number): Promise<CallResult> {
    try {
      const res = await this.http.axiosRef.request<string>(this.requestConfig(call, snippetBytes));
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
    // shutting down: calls still running were handed back
    await Promise.all([...this.agents.map((a) => a.destroy().catch(() => undefined)), this.pools.destroy()]);
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

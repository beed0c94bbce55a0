import type { Outcome } from '../../model/states.js';
import type { ConnectionCredentials } from './agent.pools.js';
import type { CallTrace } from './undici.adapter.js';

/** One HTTP call the dispatcher makes (HttpTransport.send), and what came of it. */
export interface OutgoingCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
  timeoutMs: number;
  /** Trace context the attempt's span continues (the accepting request's), if any. */
  traceparent?: string | null;
  /** May connect to the ranges ALLOW_PRIVATE_NETWORKS opens (its key's grant); otherwise to public addresses only. */
  privateNetworks?: boolean;
  /** Its receiver's mutual TLS: sent through that receiver's own connections (AgentPools). */
  tls?: ConnectionCredentials;
}

export interface CallResult {
  outcome: Outcome;
  statusCode?: number;
  error?: string;
  responseHeaders?: Record<string, string>;
  responseBody?: string;
  retryAfter?: string;
  trace: CallTrace;
  /** The receiver authentication it was sent with (basic, bearer, oauth2), if any. */
  auth?: string;
  /** Time spent getting an OAuth2 token before the call (fetched, or waited for), ms. */
  tokenMs?: number;
}

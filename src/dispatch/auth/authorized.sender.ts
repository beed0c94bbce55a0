import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { HttpTransport } from '../transport/http.transport.js';
import type { CallResult, OutgoingCall } from '../transport/call.js';
import type { SendCredentials } from './credential.cache.js';
import { TokenCache, TokenError } from './token.cache.js';

/** `headers` with `value` as its one Authorization header, whatever case a stored one had: the receiver's auth replaces it. */
export function setAuthorization(headers: Record<string, string>, value: string): void {
  for (const name in headers) if (name.length === 13 && name.toLowerCase() === 'authorization') delete headers[name];
  headers.authorization = value;
}

/**
 * Sends a call with its receiver's credentials: through the receiver's own
 * connections when it has mutual TLS, with its basic or bearer Authorization, or
 * with an OAuth2 token (TokenCache). A receiver answering 401 to a token the call did
 * not have fetched for it (one in memory, or one another process stored) gets the call
 * again at once with a new one, once. A token that cannot be had is the
 * attempt's outcome (`auth_error`, its error naming the token endpoint), retried as
 * any failed attempt is. The result says which authentication went out (`auth`) and
 * how long getting a token took (`tokenMs`); never the credential.
 */
@Injectable()
export class AuthorizedSender {
  constructor(
    private readonly transport: HttpTransport,
    private readonly tokens: TokenCache,
  ) {}

  send(call: OutgoingCall, c: SendCredentials | null | undefined): Promise<CallResult> {
    if (!c) return this.transport.send(call);
    if (c.tls) call.tls = c.tls;
    if (c.oauth2) return this.sendWithToken(call, c);
    if (c.authorization) setAuthorization(call.headers, c.authorization);
    return c.type ? this.transport.send(call).then((r) => Object.assign(r, { auth: c.type })) : this.transport.send(call);
  }

  private async sendWithToken(call: OutgoingCall, c: SendCredentials): Promise<CallResult> {
    let token = this.tokens.cached(c, call.timeoutMs);
    let tokenMs: number | undefined;
    const cached = token !== undefined;
    if (!token) {
      const t0 = performance.now();
      try {
        token = await this.tokens.acquire(c, call.timeoutMs);
      } catch (error) {
        return tokenFailure(error, t0);
      }
      tokenMs = elapsedSince(t0);
    }
    setAuthorization(call.headers, `Bearer ${token.accessToken}`);
    let result = await this.transport.send(call);
    // A token fetched for this call (by it, or by a call of this process at the same time)
    // is as new as tokens get: refused, it goes as it is. One from memory or from the
    // shared row may be stale (revoked, say).
    if (result.statusCode === 401 && (cached || !this.tokens.fetchedHere(token))) {
      // the receiver no longer takes the token every worker shares: a new one, and the call again, once
      this.tokens.drop(c, token.tokenId);
      const t1 = performance.now();
      let next;
      try {
        next = await this.tokens.acquire(c, call.timeoutMs, token.tokenId);
      } catch (error) {
        return tokenFailure(error, t1);
      }
      tokenMs = elapsedSince(t1);
      setAuthorization(call.headers, `Bearer ${next.accessToken}`);
      result = await this.transport.send(call);
    }
    result.auth = 'oauth2';
    if (tokenMs !== undefined) result.tokenMs = tokenMs;
    return result;
  }
}

const elapsedSince = (t0: number) => Math.round((performance.now() - t0) * 1000) / 1000;

function tokenFailure(error: unknown, t0: number): CallResult {
  const ms = elapsedSince(t0);
  const message = error instanceof TokenError ? error.message : 'token endpoint: the token could not be had';
  return {
    outcome: 'auth_error',
    error: message.slice(0, 500),
    trace: { startedAt: new Date(Date.now() - ms), durationMs: ms },
    auth: 'oauth2',
    tokenMs: ms,
  };
}

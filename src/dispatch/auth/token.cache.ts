import { Injectable } from '@nestjs/common';
import { hostname } from 'node:os';
import { USER_AGENT } from '../../common/user-agent.js';
import { uuidv7 } from '../../common/uuid.js';
import { TokenRepository, type SharedToken } from '../../receiver-auth/token.repository.js';
import { readTokenAnswer, refreshAt, scrub, TOKEN_RESPONSE_BYTES, tokenRequest } from '../../receiver-auth/token.policy.js';
import { HttpTransport } from '../transport/http.transport.js';
import type { SendCredentials } from './credential.cache.js';

/** How often a worker waiting for another worker's fetch looks at the shared row. */
const POLL_MS = 25;
/** A fetch's lease outlasts its timeout by this much: the fetching worker stores before it runs out. */
const LEASE_MARGIN_MS = 2_000;
/** Tokens a process keeps in memory past which expired ones are dropped. */
const KEPT_MAX = 50_000;

/** Why no token could be had; its message names the token endpoint and what it answered, never a secret. */
export class TokenError extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * OAuth2 access tokens of receivers (client credentials grant), shared by all workers
 * through receiver_token and kept in memory by each. A call uses the token in memory
 * while valid (`cached`, no statement); past refreshAt it still goes with it, and one
 * fetch starts behind it. Without one (`acquire`), a worker takes the shared row's
 * token if not yet due, or else the row's lease (one worker gets it), fetches through
 * the callbacks' own transport (SSRF check, proxy, timeout), stores the token sealed
 * and ends the lease, while the others poll the row: one fetch per expiry, and no
 * transaction open while a token endpoint answers. A token a receiver answers 401 to is
 * dropped (`rejected`) and the lease may be taken before it is due, unless another
 * worker stored a newer one. Concurrent acquisitions in a process share one promise.
 */
@Injectable()
export class TokenCache {
  private readonly tokens = new Map<string, SharedToken>();
  private readonly acquiring = new Map<string, Promise<SharedToken>>();
  /** The lease holder's name: this process. */
  private readonly owner = `${hostname()}:${process.pid}:${uuidv7()}`;
  /** Tokens this process fetched from token endpoints (the tests and the benchmark count them). */
  fetched = 0;
  /** The tokens this process fetched itself, not read from the shared row (AuthorizedSender's 401 rule). */
  private readonly fetchedTokens = new WeakSet<SharedToken>();

  constructor(
    private readonly repo: TokenRepository,
    private readonly transport: HttpTransport,
  ) {}

  /** The token in memory while it is valid; past its refresh time a fetch starts behind it (`timeoutMs` bounds that fetch). */
  cached(c: SendCredentials, timeoutMs: number): SharedToken | undefined {
    const t = this.tokens.get(c.key);
    if (t === undefined) return undefined;
    const now = Date.now();
    if (now >= t.expiresAt) {
      this.tokens.delete(c.key);
      return undefined;
    }
    if (now >= t.refreshAt && !this.acquiring.has(c.key)) this.acquire(c, timeoutMs).catch(() => undefined); // the calls go on with `t`; a failure shows on the next call that needs a token
    return t;
  }

  /** Whether this process fetched `token` from the token endpoint itself (not read it from the shared row). */
  fetchedHere(token: SharedToken): boolean {
    return this.fetchedTokens.has(token);
  }

  /** Forgets the token `tokenId` (a receiver answered 401 to it). */
  drop(c: SendCredentials, tokenId: string): void {
    if (this.tokens.get(c.key)?.tokenId === tokenId) this.tokens.delete(c.key);
  }

  /** A token for these credentials within `timeoutMs`, never the one `rejected` names; throws TokenError. */
  acquire(c: SendCredentials, timeoutMs: number, rejected?: string): Promise<SharedToken> {
    const key = rejected === undefined ? c.key : `${c.key} ${rejected}`;
    let running = this.acquiring.get(key);
    if (!running) {
      running = this.run(c, Date.now() + timeoutMs, rejected).finally(() => this.acquiring.delete(key));
      this.acquiring.set(key, running);
    }
    return running;
  }

  private async run(c: SendCredentials, deadline: number, rejected: string | undefined): Promise<SharedToken> {
    const url = c.oauth2!.auth.tokenUrl;
    try {
      for (;;) {
        const mine = this.tokens.get(c.key);
        if (mine && mine.tokenId !== rejected && Date.now() < mine.refreshAt) return mine;
        const { token, fetching } = await this.repo.readToken(c.receiverId, c.version);
        const usable = token !== null && token.tokenId !== rejected;
        if (usable && Date.now() < token.refreshAt) return this.keep(c, token);
        if (!fetching) {
          const leaseMs = Math.max(0, deadline - Date.now()) + LEASE_MARGIN_MS;
          if (await this.repo.takeLease(c.receiverId, c.version, this.owner, leaseMs, rejected ?? null)) return await this.fetch(c, deadline);
        }
        // another worker is fetching (or took the lease just now): a token still valid goes out meanwhile
        if (usable && Date.now() < token.expiresAt) return this.keep(c, token);
        if (Date.now() >= deadline) throw new TokenError(`token endpoint ${url}: no token in time (another worker is fetching one)`);
        await sleep(POLL_MS);
      }
    } catch (error) {
      if (error instanceof TokenError) throw error;
      throw new TokenError(`token endpoint ${url}: ${scrub((error as Error).message ?? String(error), c.secrets)}`.slice(0, 500));
    }
  }

  /** Fetches a token under the lease and stores it for every worker; the lease ends either way. */
  private async fetch(c: SendCredentials, deadline: number): Promise<SharedToken> {
    const { auth, clientSecret, privateNetworks } = c.oauth2!;
    const started = Date.now();
    try {
      const { headers, body } = tokenRequest(auth, clientSecret);
      const result = await this.transport.request(
        {
          url: auth.tokenUrl,
          method: 'POST',
          headers: { 'user-agent': USER_AGENT, ...headers },
          body,
          timeoutMs: Math.max(1, deadline - started),
          privateNetworks,
        },
        TOKEN_RESPONSE_BYTES,
      );
      if (result.statusCode === undefined)
        throw new TokenError(`token endpoint ${auth.tokenUrl} ${scrub(`failed: ${result.error ?? result.outcome}`, c.secrets)}`);
      const answer = readTokenAnswer(result.statusCode, result.responseBody ?? '');
      if ('problem' in answer) throw new TokenError(`token endpoint ${auth.tokenUrl} ${scrub(answer.problem, c.secrets)}`);
      this.fetched++;
      // its lifetime counts from when it was asked for: never trusted longer than the server meant
      const token = {
        accessToken: answer.accessToken,
        fetchedAt: started,
        refreshAt: refreshAt(started, answer.lifetimeMs),
        expiresAt: started + answer.lifetimeMs,
      };
      const stored = await this.repo.storeToken(c.receiverId, c.version, this.owner, token);
      this.fetchedTokens.add(stored);
      return this.keep(c, stored);
    } catch (error) {
      await this.repo.releaseLease(c.receiverId, c.version, this.owner).catch(() => undefined); // a lease left behind runs out by itself
      throw error;
    }
  }

  private keep(c: SendCredentials, token: SharedToken): SharedToken {
    if (this.tokens.size >= KEPT_MAX) {
      const now = Date.now();
      for (const [key, t] of this.tokens) if (t.expiresAt <= now) this.tokens.delete(key);
    }
    this.tokens.set(c.key, token);
    return token;
  }
}

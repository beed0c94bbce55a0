import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { AppConfig } from '../config/app.config.js';
import {
  errorView,
  linesOf,
  readOutput,
  sandboxInput,
  type TransformErrorView,
  type TransformLimits,
  type TransformResult,
  type WebhookContext,
  type WebhookRequest,
} from './transform.policy.js';
import { TransformRepository } from './transform.repository.js';
import { TransformSandbox } from './transform.sandbox.js';

/** A receiver's transform, ready to run: `key` names this version of its code in the sandbox's caches. */
export interface ReceiverTransform {
  receiverId: string;
  receiver: string;
  code: string;
  key: string;
}

/** The worker reads receivers' transforms at most this often, so a change applies to attempts starting a second after it. */
const LOOKUP_MS = 1_000;
/** Cached lookups past which expired ones are dropped. */
const LOOKUP_CACHE_MAX = 50_000;

/** The sandbox's cache key of a receiver's code: its id and a hash of the code, so a changed code is compiled afresh. */
export const transformKey = (receiverId: string, code: string): string => `${receiverId}:${createHash('sha256').update(code).digest('base64url').slice(0, 22)}`;

/**
 * Runs receivers' transforms (src/transforms/README in docs/guide.md, "Transformations"):
 * looks up the transforms of a claim's callbacks (cached for a second), runs one on a
 * request in the sandbox (transform.sandbox.ts) and reads its answer by the rules of
 * transform.policy.ts.
 */
@Injectable()
export class TransformService {
  private readonly lookups = new Map<string, { transform: ReceiverTransform | null; until: number }>();
  readonly limits: TransformLimits;

  constructor(
    private readonly repo: TransformRepository,
    private readonly sandbox: TransformSandbox,
    config: AppConfig,
  ) {
    this.limits = { timeoutMs: config.transformTimeoutMs, memoryMb: config.transformMemoryMb, maxBodyBytes: config.maxCallbackBodyBytes };
  }

  /**
   * The transforms of these callbacks' receivers, by receiver id (receivers without one
   * are absent): one statement for the receivers not looked up within the last second,
   * none when all were. A receiver whose code changed has its old version dropped from
   * the sandbox.
   */
  async transformsFor(rows: Iterable<{ receiverId: string | null }>): Promise<Map<string, ReceiverTransform>> {
    const now = Date.now();
    const found = new Map<string, ReceiverTransform>();
    const missing = new Set<string>();
    for (const { receiverId } of rows) {
      if (!receiverId || found.has(receiverId) || missing.has(receiverId)) continue;
      const hit = this.lookups.get(receiverId);
      if (hit && hit.until > now) {
        if (hit.transform) found.set(receiverId, hit.transform);
      } else missing.add(receiverId);
    }
    if (missing.size === 0) return found;
    const read = new Map((await this.repo.findTransforms([...missing])).map((r) => [r.receiverId, r]));
    if (this.lookups.size + missing.size > LOOKUP_CACHE_MAX) for (const [id, hit] of this.lookups) if (hit.until <= now) this.lookups.delete(id);
    for (const id of missing) {
      const row = read.get(id);
      const before = this.lookups.get(id)?.transform;
      const transform = row ? (before?.code === row.code && before.receiver === row.receiver ? before : { ...row, key: transformKey(id, row.code) }) : null;
      if (before && before.key !== transform?.key) this.sandbox.drop([before.key]);
      this.lookups.set(id, { transform, until: now + LOOKUP_MS });
      if (transform) found.set(id, transform);
    }
    return found;
  }

  /** Runs `transform` on `request`: what to send, a cancel (the handler returned null), or the error; with the time it took. */
  async apply(
    transform: Pick<ReceiverTransform, 'key' | 'code'>,
    request: WebhookRequest,
    context: WebhookContext,
  ): Promise<TransformResult & { durationMs: number }> {
    const started = performance.now();
    const answer = await this.sandbox.run({ key: transform.key, code: transform.code, ...sandboxInput(request, context) });
    const durationMs = performance.now() - started;
    if (answer.error) return { kind: 'error', error: errorView(answer.error, linesOf(transform.code), this.limits), durationMs };
    return { ...readOutput(answer.text, request, this.limits), durationMs };
  }

  /** Why `code` is no transform (it does not compile, or defines no handler), with its line; undefined when it is one. */
  async check(code: string): Promise<TransformErrorView | undefined> {
    const error = await this.sandbox.check(transformKey('check', code), code);
    return error && errorView(error, linesOf(code), this.limits);
  }
}

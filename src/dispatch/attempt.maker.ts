import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app.config.js';
import { AuthorizedSender } from './auth/authorized.sender.js';
import type { QueuedCallback } from './call.preparation.js';
import { buildRequest, toRecordedOutcome } from './request.builder.js';
import { cancelledOutcome, TransformStep } from './transform.step.js';
import type { CallResult } from './transport/call.js';

/** One attempt of a row the sender took: the call built, transformed, sent with its credentials, and its outcome. */
@Injectable()
export class AttemptMaker {
  constructor(
    private readonly config: AppConfig,
    private readonly transport: AuthorizedSender,
    private readonly transformStep: TransformStep,
  ) {}

  /**
   * Makes the row's attempt: its stored request, or what its receiver's transform made
   * of it (transform.step.ts), which may also fail (an attempt without a call) or send
   * nothing (no attempt: the callback is cancelled). `called`: a request went out.
   */
  async make(row: QueuedCallback): Promise<{ called: boolean; result?: CallResult; outcome: ReturnType<typeof toRecordedOutcome> }> {
    if (!row.transform) {
      const result = await this.transport.send(buildRequest(row, row.secrets, this.config.httpTimeoutMs), row.credentials);
      return { called: true, result, outcome: toRecordedOutcome(row, result, this.config) };
    }
    const prepared = await this.transformStep.prepare({ ...row, transform: row.transform });
    if (prepared.kind === 'cancelled') return { called: false, outcome: cancelledOutcome(row, prepared.startedAt, prepared.durationMs) };
    const result: CallResult = prepared.kind === 'call' ? await this.transport.send(prepared.call, row.credentials) : prepared.result;
    const transformed = prepared.kind === 'call' ? prepared.transformed : null;
    return { called: prepared.kind === 'call', result, outcome: { ...toRecordedOutcome(row, result, this.config), transformed } };
  }
}

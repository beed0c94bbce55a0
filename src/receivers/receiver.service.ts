import { Injectable } from '@nestjs/common';
import { AppError, notFound } from '../common/app.error.js';
import type { SqlRunner } from '../database/pg.statements.js';
import { ReadReplica } from '../database/read-replica.js';
import { pageOf } from '../common/page.js';
import { uuidv7 } from '../common/uuid.js';
import { filterProblem, type Filter } from './event-filter.policy.js';
import { MAX_SUBSCRIPTIONS, patternProblem } from './event-type.policy.js';
import { newSigningSecret } from '../signing/signature.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import { CredentialService } from '../receiver-auth/credential.service.js';
import { TaskRepository } from '../tasks/task.repository.js';
import { TaskRunner } from '../tasks/task.runner.js';
import { toTaskView } from '../tasks/task.view.js';
import { codeProblem } from '../transforms/transform.policy.js';
import { TransformService } from '../transforms/transform.service.js';
import type { PutReceiverDto } from './dto/put-receiver.dto.js';
import { RECEIVER_SORTS, type ReceiverHealthRow, type ReceiverListCursor, type ReceiverSort } from './receiver-list.sql.js';
import { ReceiverRepository, type ReceiverRow } from './receiver.repository.js';

/** A receiver's name: the sender's own id for the party (`merchant-42`), safe in a URL path. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._~:@-]{0,127}$/;
/** A receiver's secret must carry at least this many bytes of key. */
const MIN_SECRET_BYTES = 24;
/** Figures look back this far by default (15 minutes). */
const FIGURES_WINDOW_MS = 15 * 60_000;
/** The list's success rate counts the attempts of the last hour. */
const HEALTH_WINDOW_MS = 60 * 60_000;

export function receiverNameProblem(name: unknown): string | undefined {
  return typeof name === 'string' && NAME.test(name)
    ? undefined
    : 'a receiver name is 1 to 128 characters: letters, digits and . _ ~ : @ -, starting with a letter or digit';
}

function checkSecret(secret: string | undefined): void {
  if (secret === undefined) return;
  const bytes = Buffer.from(secret.slice('whsec_'.length), 'base64');
  if (bytes.length < MIN_SECRET_BYTES)
    throw new AppError('validation_failed', `secret must hold at least ${MIN_SECRET_BYTES} bytes (base64 after whsec_); got ${bytes.length}`);
}

/** Its subscriptions, each checked (a 400 naming the bad one), without repeats. */
function checkSubscriptions(patterns: unknown[]): string[] {
  if (patterns.length > MAX_SUBSCRIPTIONS) throw new AppError('validation_failed', `eventTypes holds at most ${MAX_SUBSCRIPTIONS} patterns`);
  for (const [i, p] of patterns.entries()) {
    const problem = patternProblem(p);
    if (problem) throw new AppError('validation_failed', `eventTypes[${i}] ${problem}`, { eventTypes: [p] });
  }
  return [...new Set(patterns as string[])];
}

/** The filter, or null to remove it; an invalid one is a 400 naming where it is wrong. */
function checkFilter(filter: unknown): Filter | null {
  if (filter === null) return null;
  const problem = filterProblem(filter);
  if (problem) throw new AppError('validation_failed', `invalid ${problem}`);
  return filter as Filter;
}

export function toReceiverView(r: ReceiverRow) {
  return {
    name: r.name,
    url: r.url,
    description: r.description,
    headers: r.headers as Record<string, string>,
    timeoutMs: r.timeoutMs,
    maxAttempts: r.maxAttempts,
    retryDelaysMs: r.retryDelaysMs ?? [], // a receiver made without them stores NULL
    disabled: r.disabled,
    disabledReason: r.disabledReason,
    disabledAt: r.disabledAt?.toISOString() ?? null,
    failingSince: r.failingSince?.toISOString() ?? null,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

function toHealthView(r: ReceiverHealthRow, since: Date) {
  return {
    since: since.toISOString(),
    lastSuccessAt: r.lastSuccessAt?.toISOString() ?? null,
    attempts: r.attempts,
    successes: r.successes,
    successRate: r.attempts > 0 ? r.successes / r.attempts : null,
    pending: r.pending,
    inFlight: r.inFlight,
    held: r.held,
  };
}

function sortParam(raw: string | undefined): ReceiverSort {
  if (raw === undefined || raw === '') return 'name';
  if (!(RECEIVER_SORTS as readonly string[]).includes(raw)) throw new AppError('validation_failed', `sort must be one of ${RECEIVER_SORTS.join(', ')}`);
  return raw as ReceiverSort;
}

/**
 * The cursor of the next page: the last name; in the health order its `failing_since`
 * (ISO, or `-` when none), a `/` and the name (a name has no `/`).
 */
function nextCursorOf(sort: ReceiverSort, last: ReceiverRow): string {
  return sort === 'name' ? last.name : `${last.failingSince?.toISOString() ?? '-'}/${last.name}`;
}

function cursorOf(sort: ReceiverSort, raw: string | undefined): ReceiverListCursor | undefined {
  if (raw === undefined || raw === '') return undefined;
  const bad = () => new AppError('validation_failed', `cursor must be the nextCursor of a previous page of the same sort (${sort})`);
  if (sort === 'name') {
    if (receiverNameProblem(raw)) throw bad();
    return { name: raw };
  }
  const slash = raw.indexOf('/');
  const [at, name] = [raw.slice(0, slash), raw.slice(slash + 1)];
  if (slash < 0 || receiverNameProblem(name)) throw bad();
  if (at === '-') return { name, failingSince: null };
  const failingSince = new Date(at);
  if (Number.isNaN(failingSince.getTime()) || failingSince.toISOString() !== at) throw bad();
  return { name, failingSince };
}

@Injectable()
export class ReceiverService {
  constructor(
    private readonly receivers: ReceiverRepository,
    private readonly signing: SigningSecretService,
    private readonly tasks: TaskRepository,
    private readonly runner: TaskRunner,
    private readonly transforms: TransformService,
    private readonly credentials: CredentialService,
    private readonly reads: ReadReplica,
  ) {}

  /**
   * Creates (created: true) or updates the receiver; answers it with its secrets.
   * `portalHosts`: the destinations of the URLs a portal session sets, its own and its
   * token endpoint's (recorded in `portal_hosts`: its calls there go public only).
   */
  async putReceiver(apiKeyId: string, name: string, dto: PutReceiverDto, options: { portalHosts?: string[] } = {}) {
    this.checkName(name);
    // null clears a setting (the batch's or the service's applies again); for disabled and secret it means "leave as is".
    const { secret: givenSecret, disabled: givenDisabled, headers, retryDelaysMs, eventTypes, filter, transform, auth, tls, ...rest } = dto;
    // its credentials are written in the receiver's own transaction (receiver-auth/credential.service.ts)
    const withCredentials = (tx: SqlRunner, receiverId: string) => this.credentials.applyChange(tx, receiverId, { auth, tls });
    const secret = givenSecret ?? undefined;
    const disabled = givenDisabled ?? undefined;
    const settings = {
      ...rest,
      ...(headers !== undefined && { headers: headers ?? {} }),
      ...(retryDelaysMs !== undefined && { retryDelaysMs: retryDelaysMs ?? [] }),
      ...(eventTypes !== undefined && { eventTypes: checkSubscriptions(eventTypes ?? []) }),
      ...(filter !== undefined && { eventFilter: checkFilter(filter) }),
      ...(transform !== undefined && { transformCode: transform && (await this.checkTransform(transform.code)) }),
      ...(options.portalHosts?.length ? { portalHosts: options.portalHosts } : {}),
    };
    checkSecret(secret);
    const created = await this.receivers.insertReceiver(
      { id: uuidv7(), apiKeyId, name, disabled: disabled ?? false, ...settings },
      this.signing.sealNew(secret ?? newSigningSecret()),
      withCredentials,
    );
    if (created) return { created: true, receiver: await this.withSecrets(created) };
    const updated = await this.receivers.updateReceiver(apiKeyId, name, { ...settings, disabled }, withCredentials);
    if (!updated) throw new AppError('conflict', `receiver ${name} was deleted while being updated; try again`);
    // the hold or release: what fits in TASK_INLINE_MS is done before the answer, the rest goes on behind it
    if (updated.taskId) await this.runner.start(updated.taskId);
    if (secret !== undefined) {
      const current = await this.signing.secretsOfReceiver(updated.row.id);
      if (current[0]?.secret !== secret) await this.signing.rotateReceiver(apiKeyId, updated.row.id, secret);
    }
    return { created: false, receiver: await this.withSecrets(updated.row) };
  }

  /** A page in `sort` order (`name` or `health`), each receiver with its health over the last hour; on the replica when it serves the key (ReadReplica). */
  async listReceivers(apiKeyId: string, limit: number, rawSort?: string, rawCursor?: string) {
    const sort = sortParam(rawSort);
    const since = new Date(Date.now() - HEALTH_WINDOW_MS);
    const args = { apiKeyId, limit: limit + 1, sort, after: cursorOf(sort, rawCursor), since };
    const read = await this.reads.read(apiKeyId, (reader) => this.receivers.listReceivers(args, reader));
    const { rows, nextCursor } = pageOf(read, limit, (last) => nextCursorOf(sort, last));
    return { items: rows.map((r) => ({ ...toReceiverView(r), health: toHealthView(r, since) })), nextCursor };
  }

  /** Settings, secrets, and its figures since `since` (default: the last 15 minutes). */
  async getReceiver(apiKeyId: string, name: string, since = new Date(Date.now() - FIGURES_WINDOW_MS)) {
    const row = await this.require(apiKeyId, name);
    const [view, figures] = await Promise.all([this.withSecrets(row), this.receivers.figures(row.id, since)]);
    const { p50, p90, p99, ...counts } = figures;
    return { ...view, figures: { since: since.toISOString(), ...counts, latency: { p50, p90, p99 } } };
  }

  /** Deletes it at once; its callbacks are cancelled by a task, done before the answer when they are few (`task` null). */
  async deleteReceiver(apiKeyId: string, name: string) {
    this.checkName(name);
    const deleted = await this.receivers.deleteReceiver(apiKeyId, name);
    if (!deleted) throw notFound('receiver');
    const run = await this.runner.start(deleted.taskId);
    const task = run.finished ? undefined : await this.tasks.findTask(apiKeyId, deleted.taskId);
    return { name, deleted: true, cancelledCallbacks: run.done, task: task ? toTaskView(task) : null };
  }

  /** A new secret; the old one keeps signing beside it for 24 h. */
  async rotateSecret(apiKeyId: string, name: string) {
    const row = await this.require(apiKeyId, name);
    await this.signing.rotateReceiver(apiKeyId, row.id);
    return this.withSecrets(row);
  }

  /** The receiver of this key by name, else 404 (another key's receivers do not exist for you). */
  async require(apiKeyId: string, name: string): Promise<ReceiverRow> {
    this.checkName(name);
    const row = await this.receivers.findReceiver(apiKeyId, name);
    if (!row) throw notFound('receiver');
    return row;
  }

  /** The key's receivers of these names, by name; a name it has none of is a 400 naming it. */
  async resolve(apiKeyId: string, names: Iterable<string>): Promise<Map<string, ReceiverRow>> {
    const wanted = [...new Set(names)];
    if (wanted.length === 0) return new Map();
    // names outside NAME (the operator endpoint's '/operator', a deleted one's '/deleted/…', one with a NUL, which
    // Postgres cannot even compare) are no receiver a batch may name: unknown, without asking
    const named = wanted.filter((n) => !receiverNameProblem(n));
    const found = new Map(named.length === 0 ? [] : (await this.receivers.findReceivers(apiKeyId, named)).map((r) => [r.name, r]));
    const unknown = wanted.filter((n) => !found.has(n));
    if (unknown.length > 0) {
      throw new AppError(
        'validation_failed',
        `unknown receiver${unknown.length > 1 ? 's' : ''}: ${unknown.slice(0, 20).join(', ')} (create with PUT /v1/receivers/{name})`,
        { receivers: unknown },
      );
    }
    return found;
  }

  /** Whether its calls to `destination` may reach the ranges ALLOW_PRIVATE_NETWORKS opens (its key's grant, not a portal's choice). */
  privateNetworksOf(row: ReceiverRow, destination: string): Promise<boolean> {
    return this.receivers.privateNetworksOf(row.id, destination);
  }

  /** Its view with its secrets and its running task (a disable or enable still holding or releasing callbacks). */
  private async withSecrets(row: ReceiverRow) {
    const [secrets, task, credentials] = await Promise.all([
      this.signing.secretsOfReceiver(row.id),
      this.tasks.runningTaskOfReceiver(row.id),
      this.credentials.viewOf(row.id),
    ]);
    return {
      ...toReceiverView(row),
      eventTypes: row.eventTypes,
      filter: row.eventFilter as Filter | null,
      secrets,
      ...credentials,
      transform: row.transformCode === null ? null : { code: row.transformCode },
      task: task ? toTaskView(task) : null,
    };
  }

  /** The code of a transform, once it compiles and defines a handler (in the sandbox); else a 400 naming the line. */
  private async checkTransform(code: unknown): Promise<string> {
    const problem = codeProblem(code);
    if (problem) throw new AppError('validation_failed', problem);
    const error = await this.transforms.check(code as string);
    if (!error) return code as string;
    const where = error.line === null ? '' : ` (line ${error.line}:${error.column})`;
    throw new AppError('validation_failed', `transform.code does not compile: ${error.message}${where}`, { line: error.line, column: error.column });
  }

  private checkName(name: unknown): asserts name is string {
    const problem = receiverNameProblem(name);
    if (problem) throw new AppError('validation_failed', problem);
  }
}

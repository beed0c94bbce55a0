import { readFile } from 'node:fs/promises';
import type { paths, Schemas } from '../client/api.client.js';
import type { CliApi } from './api.client.js';
import { UsageError, type CliArgs } from './cli.args.js';
import { ms, progressLine, table } from './cli.format.js';

/** Where a command writes: stdout for results, stderr for progress (so `id=$(callbacks send …)` works). */
export interface Output {
  out: (text: string) => void;
  err: (text: string) => void;
  /** True when stderr is a terminal: the progress bar redraws in place. */
  tty: boolean;
}

const POLL_MS = 250;

type LatencyQuery = NonNullable<paths['/v1/history/latency']['get']['parameters']['query']>;

export async function send(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const file = args.positionals[0];
  if (!file) throw new UsageError('send needs a batch file (or - for stdin)');
  const raw = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch (error) {
    throw new UsageError(`${file} is not JSON: ${(error as Error).message}`);
  }
  if (Array.isArray(body)) body = { callbacks: body };
  // The file's JSON goes as it is: the service validates it and says what is wrong.
  const accepted = await api.call(api.client.POST('/v1/batches', { body: body as Schemas['CreateBatchDto'] }));
  io.out(args.json && !args.wait ? JSON.stringify(accepted) : accepted.id);
  if (!args.wait) return 0;
  const done = await waitForBatch(api, accepted.id, args.waitTimeoutMs, io);
  if (!done) {
    io.err(`still running after ${args.waitTimeoutMs / 1000} s: see \`callbacks status ${accepted.id}\`\n`);
    return 3;
  }
  io.out(await sequenceText(api, accepted.id));
  return 0;
}

/** Polls the batch and draws the progress bar until it completes or `timeoutMs` passes. */
export async function waitForBatch(api: CliApi, id: string, timeoutMs: number, io: Output): Promise<Schemas['BatchDto'] | undefined> {
  const started = Date.now();
  let last = '';
  for (;;) {
    const b = await api.call(api.client.GET('/v1/batches/{id}', { params: { path: { id } } }));
    const line = progressLine(b.counts, b.total, Date.now() - started);
    const shown = line.replace(/\s+[\d.]+ s$/, '');
    if (io.tty) io.err(`\r${line}${b.status === 'completed' ? '\n' : ''}`);
    else if (shown !== last || b.status === 'completed') io.err(`${line}\n`);
    last = shown;
    if (b.status === 'completed') return b;
    if (Date.now() - started > timeoutMs) return undefined;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** The batch's ASCII sequence diagram (text/plain). */
export async function sequenceText(api: CliApi, id: string): Promise<string> {
  const request = api.client.GET('/v1/batches/{id}/sequence', { params: { path: { id }, query: { format: 'text' } }, parseAs: 'text' });
  return api.call(request as Promise<{ data?: string; error?: unknown; response: Response }>);
}

export async function status(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const id = args.positionals[0];
  if (!id) throw new UsageError('status needs a batch or callback id');
  const b = await api.call(api.client.GET('/v1/batches/{id}', { params: { path: { id } } })).catch(async (error) => {
    if (error.status !== 404) throw error;
    return undefined;
  });
  if (!b) return callbackStatus(api, id, args, io);
  if (args.json) return (io.out(JSON.stringify(b)), 0);
  io.out(
    [
      `batch     ${b.id}${b.label ? `  (${b.label})` : ''}`,
      `status    ${b.status}`,
      `progress  ${progressLine(b.counts, b.total, 0).replace(/\s+[\d.]+ s$/, '')}`,
      `makespan  ${ms(b.makespanMs)}`,
      `created   ${b.createdAt}`,
      `completed ${b.completedAt ?? '-'}`,
    ].join('\n'),
  );
  return 0;
}

async function callbackStatus(api: CliApi, id: string, args: CliArgs, io: Output): Promise<number> {
  const c = await api.call(api.client.GET('/v1/callbacks/{id}', { params: { path: { id } } }));
  if (args.json) return (io.out(JSON.stringify(c)), 0);
  io.out(
    [
      `callback  ${c.id}  (batch ${c.batchId})`,
      `url       ${c.url}`,
      `status    ${c.status}`,
      '',
      table(
        ['#', 'started', 'outcome', 'code', 'duration', 'error'],
        c.attempts.map((a) => [a.number, a.startedAt, a.outcome, a.statusCode, ms(a.durationMs), a.error]),
      ),
    ].join('\n'),
  );
  return 0;
}

export async function history(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const to = new Date();
  const query = {
    from: new Date(to.getTime() - args.sinceMs).toISOString(),
    to: to.toISOString(),
    ...(args.host && { host: args.host }),
    // The service checks the bucket name and says which ones there are.
    ...(args.bucket && { bucket: args.bucket as LatencyQuery['bucket'] }),
  };
  const h = await api.call(api.client.GET('/v1/history/latency', { params: { query } }));
  if (args.json) return (io.out(JSON.stringify(h)), 0);
  io.out(`latency${args.host ? ` of ${args.host}` : ''}, ${h.bucket} buckets, ${query.from} → ${query.to}`);
  if (h.items.length === 0) return (io.out('no calls in this range'), 0);
  io.out(
    table(
      ['bucket start', 'calls', 'ok', 'failed', 'p50', 'p90', 'p99', 'max'],
      h.items.map((b) => [b.start, b.count, b.ok, b.failed, ms(b.p50), ms(b.p90), ms(b.p99), ms(b.max)]),
    ),
  );
  return 0;
}

export async function keys(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const [sub, arg] = args.positionals;
  if (sub === 'create') {
    if (!arg) throw new UsageError('keys create needs a name');
    const k = await api.call(api.client.POST('/v1/keys', { body: { name: arg, admin: args.admin, allowPrivateNetworks: args.privateNetworks } }));
    if (args.json) return (io.out(JSON.stringify(k)), 0);
    io.out(k.key);
    io.err(`key ${k.id} "${k.name}"${k.isAdmin ? ' (admin)' : ''} created: shown once, store it now\n`);
    return 0;
  }
  if (sub === 'list') {
    const { items } = await api.call(api.client.GET('/v1/keys'));
    if (args.json) return (io.out(JSON.stringify(items)), 0);
    io.out(
      table(
        ['id', 'name', 'prefix', 'admin', 'created', 'revoked'],
        items.map((k) => [k.id, k.name, `${k.prefix}…`, k.isAdmin ? 'yes' : 'no', k.createdAt, k.revokedAt]),
      ),
    );
    return 0;
  }
  if (sub === 'revoke') {
    if (!arg) throw new UsageError('keys revoke needs a key id (see keys list)');
    await api.call(api.client.DELETE('/v1/keys/{id}', { params: { path: { id: arg } } }));
    io.out(`revoked ${arg}`);
    return 0;
  }
  throw new UsageError('keys needs create <name> [--admin] [--private-networks], list, or revoke <id>');
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

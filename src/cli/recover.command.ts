import type { Schemas } from '../client/api.client.js';
import type { CliApi } from './api.client.js';
import { UsageError, type CliArgs } from './cli.args.js';
import type { Output } from './cli.commands.js';

const POLL_MS = 500;
type Recovery = Schemas['RecoveryDto'];

/**
 * `callbacks recover [filters] [--since 6h]`: starts a recovery (or, --dry-run, only
 * counts what it would send again) and prints its id; --wait follows it until done.
 * `recover show <id>` and `recover cancel <id>` follow or stop one.
 */
export async function recover(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const [sub, id] = args.positionals;
  if (sub === 'show' || sub === 'cancel') {
    if (!id) throw new UsageError(`recover ${sub} needs a recovery id`);
    const r =
      sub === 'show'
        ? await api.call(api.client.GET('/v1/recoveries/{id}', { params: { path: { id } } }))
        : await api.call(api.client.POST('/v1/recoveries/{id}/cancel', { params: { path: { id } } }));
    io.out(args.json ? JSON.stringify(r) : describe(r));
    return 0;
  }
  if (sub !== undefined) throw new UsageError(`recover takes filters (--receiver, --host, --batch, --event, --since), or show <id> | cancel <id>`);
  const f = args.recovery;
  // The filters go as given: the service checks them and says what is wrong (a 400 is exit code 1).
  const body = {
    ...(f.receiver !== undefined && { receiver: f.receiver }),
    ...(args.host !== undefined && { host: args.host }),
    ...(f.batch !== undefined && { batch: f.batch }),
    ...(f.event !== undefined && { event: f.event }),
    ...(f.status !== undefined && { status: f.status }),
    ...(f.priority !== undefined && { priority: f.priority }),
    ...(args.sinceSet && { since: new Date(Date.now() - args.sinceMs).toISOString() }),
  } as Schemas['CreateRecoveryDto'];
  if (f.dryRun) {
    const p = await api.call(api.client.POST('/v1/recoveries/preview', { body }));
    io.out(args.json ? JSON.stringify(p) : `${p.matched} callback${p.matched === 1 ? '' : 's'} would be sent again`);
    return 0;
  }
  let r = await api.call(api.client.POST('/v1/recoveries', { body }));
  io.out(args.json && !args.wait ? JSON.stringify(r) : r.id);
  if (!args.wait) return (io.err(`${progressLine(r)}\n`), 0);
  const started = Date.now();
  while (r.state === 'running') {
    if (Date.now() - started > args.waitTimeoutMs) {
      io.err(`still running after ${args.waitTimeoutMs / 1000} s: see \`callbacks recover show ${r.id}\`\n`);
      return 3;
    }
    if (io.tty) io.err(`\r${progressLine(r)}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    r = await api.call(api.client.GET('/v1/recoveries/{id}', { params: { path: { id: r.id } } }));
  }
  io.err(`${io.tty ? '\r' : ''}${progressLine(r)}\n`);
  if (args.json) io.out(JSON.stringify(r));
  return 0;
}

/** "requeued 400/1834, delivered 380, failed 0 (running)". */
export const progressLine = (r: Recovery) =>
  `requeued ${r.requeued}/${r.matched}, delivered ${r.delivered}, failed ${r.failed}, pending ${r.pending} (${r.state})`;

function describe(r: Recovery): string {
  const scope = [r.receiver && `receiver ${r.receiver}`, r.host && `host ${r.host}`, r.batchId && `batch ${r.batchId}`].filter(Boolean).join(', ');
  return [
    `recovery  ${r.id}`,
    `matches   ${r.status.join(', ')} callbacks${scope ? ` of ${scope}` : ''}, accepted ${r.since ?? 'any time'} → ${r.until}`,
    `priority  ${r.priority}`,
    `progress  ${progressLine(r)}`,
    `started   ${r.createdAt}`,
    `finished  ${r.finishedAt ?? '-'}`,
  ].join('\n');
}

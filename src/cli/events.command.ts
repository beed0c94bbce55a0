import { readFile } from 'node:fs/promises';
import type { Schemas } from '../client/api.client.js';
import type { CliApi } from './api.client.js';
import { UsageError, type CliArgs } from './cli.args.js';
import type { Output } from './cli.commands.js';
import { table } from './cli.format.js';

/** `callbacks events send <type> <payload.json|->`: publishes the event; prints its id (stdout) and its deliveries (stderr). */
export async function events(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const [sub, type, file] = args.positionals;
  if (sub !== 'send' || !type || !file) throw new UsageError('events needs send <type> <payload.json|->');
  const payload = await readJson(file);
  // The payload goes as it is: the service checks it against the type's schema and says where it fails.
  const body = { type, payload, ...(args.eventId !== undefined && { id: args.eventId }) } as Schemas['PublishEventDto'];
  const event = await api.call(api.client.POST('/v1/events', { body }));
  if (args.json) return (io.out(JSON.stringify(event)), 0);
  io.out(event.id);
  io.err(`${event.type}: ${event.deliveries} deliver${event.deliveries === 1 ? 'y' : 'ies'} (batch ${event.batchId})\n`);
  return 0;
}

/** `callbacks event-types put <name> [--description TEXT] [--schema schema.json] [--deprecated]` and `event-types list`. */
export async function eventTypes(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const [sub, name] = args.positionals;
  if (sub === 'list') {
    const items: Array<Schemas['EventTypeDto']> = [];
    let cursor: string | null = '';
    do {
      const page: Schemas['EventTypePageDto'] = await api.call(
        api.client.GET('/v1/event-types', { params: { query: { limit: '1000', ...(cursor ? { cursor } : {}) } } }),
      );
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    if (args.json) return (io.out(JSON.stringify(items)), 0);
    io.out(
      table(
        ['name', 'schema', 'deprecated', 'description'],
        items.map((t) => [t.name, t.schema ? 'yes' : 'no', t.deprecated ? 'yes' : '', t.description]),
      ),
    );
    return 0;
  }
  if (sub !== 'put' || !name) throw new UsageError('event-types needs put <name> [--description TEXT] [--schema schema.json] [--deprecated] or list');
  const body: Record<string, unknown> = {
    ...(args.receiver.description !== undefined && { description: args.receiver.description }),
    ...(args.schemaFile !== undefined && { schema: await readJson(args.schemaFile) }),
    ...(args.deprecated && { deprecated: true }),
  };
  const t = await api.call(api.client.PUT('/v1/event-types/{name}', { params: { path: { name } }, body: body as Schemas['PutEventTypeDto'] }));
  if (args.json) return (io.out(JSON.stringify(t)), 0);
  io.out(`${t.name}${t.deprecated ? ' (deprecated)' : ''}: ${t.schema ? 'payloads checked against its schema' : 'any payload'}`);
  return 0;
}

async function readJson(file: string): Promise<unknown> {
  const raw = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new UsageError(`${file} is not JSON: ${(error as Error).message}`);
  }
}

async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

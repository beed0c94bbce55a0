// One run of the `callbacks` command line: the bin (main.ts) and the tests call it.
import { ApiError, connect } from './api.client.js';
import { parseCliArgs, USAGE, UsageError } from './cli.args.js';
import { history, keys, send, status, type Output } from './cli.commands.js';
import { createLocalKey } from './local-key.command.js';
import { receive } from './receive.command.js';
import { events, eventTypes } from './events.command.js';
import { receivers } from './receivers.command.js';
import { recover } from './recover.command.js';
import { secrets } from './secrets.command.js';

const COMMANDS = { send, status, history, keys, receivers, secrets, events, 'event-types': eventTypes, recover };
/** Commands that need no service. */
const LOCAL = { receive };

/** Runs one command; resolves to the exit code (0 ok, 1 API error, 2 usage, 3 --wait timed out). */
export async function run(argv: string[], env: Record<string, string | undefined>, io: Output): Promise<number> {
  try {
    const args = parseCliArgs(argv, env);
    if (args.help || args.command === '' || args.command === 'help') return (io.out(USAGE.trimEnd()), 0);
    if (args.command === 'receive') return await LOCAL.receive(args, io);
    const command = COMMANDS[args.command as keyof typeof COMMANDS];
    if (!command) throw new UsageError(`unknown command: ${args.command}`);
    if (args.local) {
      if (args.command !== 'keys') throw new UsageError('--local works with keys create only');
      return await createLocalKey(args, env, io);
    }
    return await command(connect(args.url, args.key), args, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    if (error instanceof ApiError) {
      io.err(`error: ${error.message}${error.status ? ` (${error.status} ${error.code})` : ''}\n`);
      return 1;
    }
    throw error;
  }
}

import { parseArgs } from 'node:util';

export const USAGE = `callbacks — send and watch callback batches from the terminal

usage: callbacks <command> [options]

commands:
  send <batch.json|-> [--wait]      POST the batch (an object {callbacks:[…]} or an array of callbacks);
                                    prints its id; --wait shows progress, then the sequence diagram
  status <id>                       a batch's (or a callback's) status and counts
  history [--host URL] [--bucket 1m] [--since 1h]
                                    latency per time bucket (p50/p90/p99) from /v1/history/latency
  keys create <name> [--admin] [--private-networks]
                                    make an API key (shown once); --private-networks lets its
                                    callbacks reach the ranges ALLOW_PRIVATE_NETWORKS opens
  keys create <name> --admin --local
                                    the same without a key: written straight into the service's
                                    database (DATABASE_URL, or the embedded one under DATA_DIR,
                                    as the service's own settings say): for a lost first key; an
                                    admin key made so may reach private networks, as the first key
  keys list                         list keys
  keys revoke <id>                  revoke a key
  receivers put <name> [--endpoint URL] [--description TEXT] [--timeout-ms N] [--max-attempts N]
                [--secret whsec_…] [--disable | --enable] [--file settings.json]
                [--auth-file auth.json] [--client-cert cert.pem --client-key key.pem] [--ca ca.pem]
                                    create or update a receiver (--file: the PUT body as JSON;
                                    the flags override it); prints it with its secrets.
                                    --auth-file: its auth as JSON ({"type":"oauth2",…}, or null);
                                    --client-cert, --client-key, --ca: PEM files for mutual TLS
  receivers list                    the key's receivers
  receivers show <name> [--since 15m]
                                    settings, secrets, figures (pending, held, outcomes, latency)
  receivers test <name>             one signed example call to it now, with its credentials: the attempt
  receivers rotate <name>           a new secret; the old one keeps signing for 24 h
  receivers delete <name>           delete it; its pending callbacks are cancelled
  receivers portal <name> [--ttl 1h] [--capabilities read,replay,rotate,edit]
                                    a link to the receiver's portal (its deliveries only) to hand
                                    the receiver; --revoke ends every session of it instead
  events send <type> <payload.json|-> [--id ID]
                                    publish an event to the receivers subscribed to its type;
                                    prints its id (and its deliveries on stderr)
  event-types put <name> [--description TEXT] [--schema schema.json] [--deprecated]
                                    create or update an event type (--schema: its JSON Schema)
  event-types list                  the key's event types
  recover [--receiver NAME] [--host URL] [--batch ID] [--event ID] [--since 6h]
          [--status failed,cancelled] [--priority low|normal|high] [--dry-run] [--wait]
                                    send failed callbacks of the last --since again (a recovery);
                                    --dry-run only counts them; --wait follows it to the end
  recover show <id> | recover cancel <id>
                                    a recovery's progress; stop it
  receive [--port 4555]             a receiver on this machine (127.0.0.1) that prints each call it
                                    gets and answers 200 (?code=N: N) after ?sleep= ms; Ctrl-C stops it
  secrets new-key                   print a new SECRETS_KEY (made here; changes nothing)
  secrets keys                      which keys the stored signing secrets are sealed under (admin)
  secrets rotate-key                re-encrypt every signing secret under the service's SECRETS_KEY,
                                    online, 1,000 per transaction (admin; after every process got
                                    the new SECRETS_KEY and the old one in SECRETS_KEY_PREVIOUS)

options:
  --url URL        service address (env CALLBACKS_URL, default http://127.0.0.1:3000)
  --key KEY        API key (env CALLBACKS_API_KEY)
  --json           print the API's JSON instead of text
  --wait-timeout S with --wait: give up after S seconds (default 3600); exit 3
  -h, --help       this help
`;

export interface CliArgs {
  command: string;
  positionals: string[];
  url: string;
  key?: string;
  wait: boolean;
  waitTimeoutMs: number;
  json: boolean;
  admin: boolean;
  /** keys create --private-networks: the key's callbacks may reach ALLOW_PRIVATE_NETWORKS's ranges. */
  privateNetworks: boolean;
  /** receive --port. */
  port?: number;
  /** keys create --local: past the API, into the database. */
  local: boolean;
  host?: string;
  bucket?: string;
  sinceMs: number;
  /** --since was given (else each command's own default). */
  sinceSet: boolean;
  help: boolean;
  /** events send --id: the event's own id. */
  eventId?: string;
  /** event-types put --schema: the file holding the type's JSON Schema. */
  schemaFile?: string;
  /** event-types put --deprecated. */
  deprecated: boolean;
  /** recover: its filters and flags. */
  recovery: {
    receiver?: string;
    batch?: string;
    event?: string;
    status?: string[];
    priority?: string;
    dryRun: boolean;
  };
  /** receivers portal: the session asked for (--ttl, --capabilities), or --revoke. */
  portal: { ttlSeconds?: number; capabilities?: string[]; revoke: boolean };
  /** receivers put: the settings flags given. */
  receiver: {
    url?: string;
    description?: string;
    timeoutMs?: number;
    maxAttempts?: number;
    secret?: string;
    disabled?: boolean;
    file?: string;
    /** --auth-file, --client-cert, --client-key, --ca: files read into `auth` and `tls`. */
    authFile?: string;
    clientCertFile?: string;
    clientKeyFile?: string;
    caFile?: string;
  };
}

export class UsageError extends Error {}

const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "15m", "1h", "7d" → milliseconds. */
export function parseDuration(raw: string): number {
  const m = DURATION.exec(raw.trim());
  if (!m || Number(m[1]) === 0) throw new UsageError(`not a duration: ${raw} (use e.g. 90s, 15m, 1h, 7d)`);
  return Number(m[1]) * UNIT_MS[m[2]];
}

/** argv (without node and script) and the environment → what to do. Throws UsageError. */
export function parseCliArgs(argv: string[], env: Record<string, string | undefined>): CliArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        key: { type: 'string' },
        wait: { type: 'boolean' },
        'wait-timeout': { type: 'string' },
        json: { type: 'boolean' },
        admin: { type: 'boolean' },
        'private-networks': { type: 'boolean' },
        local: { type: 'boolean' },
        port: { type: 'string' },
        host: { type: 'string' },
        bucket: { type: 'string' },
        since: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        endpoint: { type: 'string' },
        description: { type: 'string' },
        'timeout-ms': { type: 'string' },
        'max-attempts': { type: 'string' },
        secret: { type: 'string' },
        disable: { type: 'boolean' },
        enable: { type: 'boolean' },
        file: { type: 'string' },
        id: { type: 'string' },
        schema: { type: 'string' },
        deprecated: { type: 'boolean' },
        receiver: { type: 'string' },
        batch: { type: 'string' },
        event: { type: 'string' },
        status: { type: 'string' },
        priority: { type: 'string' },
        'dry-run': { type: 'boolean' },
        ttl: { type: 'string' },
        capabilities: { type: 'string' },
        revoke: { type: 'boolean' },
        'auth-file': { type: 'string' },
        'client-cert': { type: 'string' },
        'client-key': { type: 'string' },
        ca: { type: 'string' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values: v, positionals } = parsed;
  const [command = '', ...rest] = positionals;
  const url = (v.url ?? env.CALLBACKS_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+$/.test(url)) throw new UsageError(`--url must be like http://127.0.0.1:3000 (got ${url})`);
  const waitTimeoutS = Number(v['wait-timeout'] ?? 3600);
  if (!Number.isFinite(waitTimeoutS) || waitTimeoutS <= 0) throw new UsageError('--wait-timeout must be a positive number of seconds');
  if (v.disable && v.enable) throw new UsageError('--disable and --enable exclude each other');
  const count = (name: string, raw: string | undefined) => {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive whole number`);
    return n;
  };
  const receiver = {
    url: v.endpoint,
    description: v.description,
    timeoutMs: count('timeout-ms', v['timeout-ms']),
    maxAttempts: count('max-attempts', v['max-attempts']),
    secret: v.secret,
    disabled: v.disable ? true : v.enable ? false : undefined,
    file: v.file,
    authFile: v['auth-file'],
    clientCertFile: v['client-cert'],
    clientKeyFile: v['client-key'],
    caFile: v.ca,
  };
  const recovery = {
    receiver: v.receiver,
    batch: v.batch,
    event: v.event,
    status: v.status?.split(','),
    priority: v.priority,
    dryRun: v['dry-run'] ?? false,
  };
  const portal = {
    ttlSeconds: v.ttl === undefined ? undefined : parseDuration(v.ttl) / 1000,
    capabilities: v.capabilities?.split(',').map((c) => c.trim()),
    revoke: v.revoke ?? false,
  };
  return {
    receiver,
    recovery,
    portal,
    sinceSet: v.since !== undefined,
    command,
    positionals: rest,
    url,
    key: v.key ?? env.CALLBACKS_API_KEY,
    wait: v.wait ?? false,
    waitTimeoutMs: waitTimeoutS * 1000,
    json: v.json ?? false,
    admin: v.admin ?? false,
    privateNetworks: v['private-networks'] ?? false,
    local: v.local ?? false,
    port: v.port === undefined ? undefined : Number(v.port),
    host: v.host,
    bucket: v.bucket,
    sinceMs: parseDuration(v.since ?? '1h'),
    help: v.help ?? false,
    eventId: v.id,
    schemaFile: v.schema,
    deprecated: v.deprecated ?? false,
  };
}

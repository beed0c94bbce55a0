import { METHODS } from '../model/methods.js';
import { layerHeaders } from '../common/headers.js';
import { destinationOf, headerMapProblem, httpUrlProblem } from '../common/validators.js';

/** A request as a transform sees it and makes it: what goes out before the service adds user-agent and the signature headers. */
export interface WebhookRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

/** The rest of what a handler is given: `webhook.eventType`, `webhook.receiver`, `webhook.attempt`. */
export interface WebhookContext {
  /** The event's type when the callback is an event's delivery (its `webhook-event-type` header), else null. */
  eventType: string | null;
  receiver: string;
  /** The number of the attempt about to be made (1 on the first). */
  attempt: number;
}

/** What the sandbox thread is handed for one run (sandbox.worker.mjs). */
export interface SandboxInput {
  /** The webhook without its body, as JSON. */
  envelope: string;
  body: string | null;
  /** The body is given to the handler parsed (when it parses). */
  json: boolean;
}

/** What went wrong in the sandbox, as its thread reports it. */
export interface SandboxError {
  /** compile: the code did not evaluate; run: the handler threw; timeout, memory, stack: a bound was hit; engine: the sandbox itself failed. */
  kind: 'compile' | 'run' | 'timeout' | 'memory' | 'stack' | 'engine';
  name: string;
  message: string;
  /** QuickJS's stack trace: `    at handler (transform.js:3:12)` lines. */
  stack: string;
}

/** A transform's failure as users see it: the message, and where in their code when it is known. */
export interface TransformErrorView {
  message: string;
  line: number | null;
  column: number | null;
}

export type TransformResult = { kind: 'send'; request: WebhookRequest } | { kind: 'cancel' } | { kind: 'error'; error: TransformErrorView };

export interface TransformLimits {
  timeoutMs: number;
  memoryMb: number;
  /** The most a returned body may hold (MAX_CALLBACK_BODY_BYTES, as for a body the API accepts). */
  maxBodyBytes: number;
}

/** The most a transform's source may hold. */
export const MAX_TRANSFORM_CODE_BYTES = 65_536;
/** The file name QuickJS reports the code under (sandbox.worker.mjs). */
const FILE = 'transform.js';
const MAX_ERROR_LENGTH = 500;

/** Why `code` cannot be a transform's source (before it is compiled), or undefined. */
export function codeProblem(code: unknown): string | undefined {
  if (typeof code !== 'string' || code.trim() === '') return 'transform.code must be a non-empty string';
  if (Buffer.byteLength(code) > MAX_TRANSFORM_CODE_BYTES) return `transform.code must be at most ${MAX_TRANSFORM_CODE_BYTES} bytes`;
  if (code.includes('\u0000') || !code.isWellFormed()) return 'transform.code must not contain NUL characters or lone UTF-16 surrogates';
  return undefined;
}

/** Whether a body of this request is handed to the handler parsed: its content-type says JSON, or it has none and the body looks like a JSON object or array. */
export function isJsonBody(headers: Readonly<Record<string, string>>, body: string | null): boolean {
  if (body === null) return false;
  for (const name in headers) if (name.toLowerCase() === 'content-type') return /[/+]json\b/i.test(headers[name]);
  const first = body.trimStart()[0];
  return first === '{' || first === '[';
}

/** The sandbox's input for one run: `{method, url, headers, eventType, receiver, attempt}` as JSON, the body beside it. */
export function sandboxInput(request: WebhookRequest, context: WebhookContext): SandboxInput {
  const { method, url, headers, body } = request;
  return {
    envelope: JSON.stringify({ method, url, headers, eventType: context.eventType, receiver: context.receiver, attempt: context.attempt }),
    body,
    json: isJsonBody(headers, body),
  };
}

/** The event type of a stored request: the `webhook-event-type` header an event's delivery carries. */
export function eventTypeOf(headers: Readonly<Record<string, string>>): string | null {
  for (const name in headers) if (name.toLowerCase() === 'webhook-event-type') return headers[name];
  return null;
}

const isServiceHeader = (name: string) => name.toLowerCase().startsWith('webhook-');

/**
 * The request a handler's answer makes (`text` as the sandbox returns it: the webhook's
 * fields as JSON, a newline, the body; null: the handler returned null), held to the
 * rules of a request the API accepts: a method the API allows, an http(s) URL, headers
 * by the header rules (no reserved names, none set twice whatever the case). The
 * service's own `webhook-*` headers (an event's id and type) go out as they came
 * whatever the handler did with them; changing one is an error. A field the handler
 * left out (undefined) keeps the webhook's; `body: null` sends none. A body it left an
 * object (or any JSON value but a string) goes as JSON, with `content-type:
 * application/json` when it sets none; a string goes as it is.
 */
export function readOutput(text: string | null, input: WebhookRequest, limits: TransformLimits): TransformResult {
  if (text === null) return { kind: 'cancel' };
  const split = text.indexOf('\n');
  const meta = JSON.parse(text.slice(0, split)) as { method?: unknown; url?: unknown; headers?: unknown; body: 'keep' | 'none' | 'text' | 'json' };
  // A field the handler left out (undefined) keeps the webhook's.
  meta.method ??= input.method;
  meta.url ??= input.url;
  meta.headers ??= input.headers;
  const fail = (message: string): TransformResult => ({ kind: 'error', error: { message: `the handler returned ${message}`, line: null, column: null } });

  const method = typeof meta.method === 'string' ? meta.method.toUpperCase() : meta.method;
  if (!(METHODS as readonly unknown[]).includes(method)) return fail(`method ${JSON.stringify(meta.method)}: it must be one of ${METHODS.join(', ')}`);
  const urlProblem = httpUrlProblem(meta.url);
  if (urlProblem) return fail(`url ${JSON.stringify(meta.url)}, which ${urlProblem}`);

  const given = meta.headers;
  if (given === null || typeof given !== 'object' || Array.isArray(given)) return fail('headers that are not an object of name to string value');
  const own = Object.fromEntries(Object.entries(input.headers).filter(([name]) => isServiceHeader(name)));
  const ownByName = new Map(Object.entries(own).map(([name, value]) => [name.toLowerCase(), value]));
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given as Record<string, unknown>)) {
    if (isServiceHeader(name) && ownByName.get(name.toLowerCase()) === value) continue; // the service's own, as it came
    headers[name] = value as string;
  }
  const headerProblem = headerMapProblem(headers);
  if (headerProblem) return fail(`headers where ${headerProblem}`);

  let body: string | null = null;
  if (meta.body === 'keep') body = input.body;
  else if (meta.body !== 'none') {
    body = text.slice(split + 1);
    if (body.includes('\u0000')) return fail('a body with a NUL character, which cannot be recorded');
    // As UTF-8 encoding sends it anyway (a lone surrogate becomes U+FFFD), so the signature covers the bytes that go.
    body = body.toWellFormed();
    const bytes = Buffer.byteLength(body);
    if (bytes > limits.maxBodyBytes) return fail(`a body of ${bytes} bytes, more than MAX_CALLBACK_BODY_BYTES (${limits.maxBodyBytes})`);
    if (meta.body === 'json' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  return { kind: 'send', request: { method: method as string, url: meta.url as string, headers: layerHeaders(own, headers), body } };
}

/**
 * Why the request a transform made may not go out with its receiver's credentials: its
 * URL is at another destination (scheme, host, port) than the callback's stored one.
 * The receiver's auth, an OAuth2 token fetched with it and its client certificate go to
 * that destination only, so code that sets the URL (a portal session may write it)
 * cannot send them anywhere else. A receiver without credentials may be sent anywhere
 * the network policy allows (transform.step.ts). Undefined when it may go.
 */
export function credentialsDestinationProblem(url: string, storedDestination: string, hasCredentials: boolean): TransformErrorView | undefined {
  if (!hasCredentials) return undefined;
  const destination = destinationOf(url);
  if (destination === storedDestination) return undefined;
  return {
    message: `the handler returned url ${JSON.stringify(url).slice(0, 200)}, at ${destination}: the receiver's credentials (auth, tls) go only to the callback's own destination, ${storedDestination}`,
    line: null,
    column: null,
  };
}

/**
 * A sandbox error as users see it: the message (a bound's own wording for a timeout,
 * the memory ceiling or a stack overflow) and the line and column in their code where
 * it happened, from the first frame of the stack inside it (`lines` long); null when
 * no frame is theirs (the code failed to define a handler, or what it returned broke a rule).
 */
export function errorView(e: SandboxError, lines: number, limits: Pick<TransformLimits, 'timeoutMs' | 'memoryMb'>): TransformErrorView {
  let message: string;
  if (e.kind === 'timeout') message = `timed out after ${limits.timeoutMs} ms`;
  else if (e.kind === 'memory') message = `out of memory (the sandbox holds ${limits.memoryMb} MiB)`;
  else if (e.kind === 'stack' || e.message === 'stack overflow') message = 'stack overflow (recursion too deep)';
  else if (e.kind === 'engine') message = `the sandbox failed: ${e.message}`;
  else message = `${e.name}: ${e.message}`;
  const at = [...e.stack.matchAll(new RegExp(`${FILE.replace('.', '\\.')}:(\\d+):(\\d+)`, 'g'))].find((m) => Number(m[1]) <= lines);
  return { message: message.slice(0, MAX_ERROR_LENGTH), line: at ? Number(at[1]) : null, column: at ? Number(at[2]) : null };
}

/** The lines of a transform's source: a frame on a later line is the service's wrapper, not the user's code. */
export const linesOf = (code: string): number => code.split('\n').length;

/** An attempt's `error` for a failed transform: `transform_error: TypeError: … (line 3:12)`. */
export function attemptError(view: TransformErrorView): string {
  const where = view.line === null ? '' : ` (line ${view.line}:${view.column})`;
  return `transform_error: ${view.message}${where}`.slice(0, MAX_ERROR_LENGTH);
}

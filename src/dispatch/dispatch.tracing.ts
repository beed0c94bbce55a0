import { ROOT_CONTEXT, SpanKind, SpanStatusCode, type Attributes, type Link, type SpanContext, type Tracer } from '@opentelemetry/api';
import type { CallResult, OutgoingCall } from './transport/call.js';
import { contextFromTraceparent, formatTraceparent, tracing } from '../tracing/tracing.setup.js';

/**
 * Attempt spans not yet linked from a write-back, by callback id. An outcome is
 * written back within milliseconds of its call; the cap only bounds what a process
 * whose database is away for long keeps (older entries are dropped first).
 */
const unwritten = new Map<string, SpanContext>();
const MAX_UNWRITTEN = 50_000;

const TRACE_HEADERS = new Set(['traceparent', 'tracestate']);

/**
 * One attempt as an HTTP client span (semantic conventions: `url.full`,
 * `server.address`, `server.port`, `http.request.method`, `http.response.status_code`,
 * `error.type`), a child of the span of the request that accepted the callback, so
 * every attempt, the retries hours later too, is in the caller's trace. The request
 * carries this span's own `traceparent` (any the client set is replaced), so the
 * receiver's spans are children of it. The phases are attributes `dispatch.phase.*`
 * (ms), as recorded on the attempt.
 */
export async function traceAttempt(tracer: Tracer, call: OutgoingCall, send: (call: OutgoingCall) => Promise<CallResult>): Promise<CallResult> {
  const url = new URL(call.url);
  const callbackId = call.headers['webhook-id'];
  const span = tracer.startSpan(
    call.method,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': call.method,
        'url.full': call.url,
        'server.address': url.hostname.replace(/^\[(.*)\]$/, '$1'),
        'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
        ...(callbackId && { 'callback.id': callbackId }),
      },
    },
    contextFromTraceparent(call.traceparent),
  );
  const sc = span.spanContext();
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(call.headers)) if (!TRACE_HEADERS.has(k.toLowerCase())) headers[k] = v;
  headers.traceparent = formatTraceparent(sc);
  const result = await send({ ...call, headers });

  const t = result.trace;
  const attributes: Attributes = { 'dispatch.outcome': result.outcome, 'dispatch.phase.total_ms': t.durationMs };
  if (result.statusCode !== undefined) attributes['http.response.status_code'] = result.statusCode;
  if (t.dnsMs !== undefined) attributes['dispatch.phase.dns_ms'] = t.dnsMs;
  if (t.connectMs !== undefined) attributes['dispatch.phase.connect_ms'] = t.connectMs;
  if (t.tunnelMs !== undefined) attributes['dispatch.phase.tunnel_ms'] = t.tunnelMs;
  if (t.tlsMs !== undefined) attributes['dispatch.phase.tls_ms'] = t.tlsMs;
  if (t.firstByteMs !== undefined) attributes['dispatch.phase.first_byte_ms'] = t.firstByteMs;
  // error.type: the status code for an answered failure (>= 400, per the HTTP client
  // conventions), else the transport's error code (ECONNREFUSED, ETIMEDOUT, …).
  const errorType =
    result.statusCode !== undefined ? (result.statusCode >= 400 ? String(result.statusCode) : undefined) : result.error?.split(':')[0] || result.outcome;
  if (errorType) {
    attributes['error.type'] = errorType;
    span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
  }
  span.setAttributes(attributes);
  span.end();
  if (callbackId) {
    if (unwritten.size >= MAX_UNWRITTEN) unwritten.delete(unwritten.keys().next().value!);
    unwritten.set(callbackId, sc);
  }
  return result;
}

/**
 * One write-back (outcomes of many callbacks, often of many traces, in one
 * statement) as a span of its own, linked to the attempt spans whose outcomes it
 * writes. Off: just `write()`.
 */
export async function traceWriteBack<T>(rows: ReadonlyArray<{ callbackId: string }>, write: () => Promise<T>): Promise<T> {
  const tracer = tracing.tracer;
  if (!tracer) return write();
  const links: Link[] = [];
  for (const r of rows) {
    const context = unwritten.get(r.callbackId);
    if (context) links.push({ context });
  }
  const span = tracer.startSpan(
    'write-back',
    {
      kind: SpanKind.CLIENT,
      links,
      attributes: { 'db.system.name': 'postgresql', 'db.operation.name': 'UPDATE', 'db.collection.name': 'callback', 'dispatch.write_back.rows': rows.length },
    },
    ROOT_CONTEXT,
  );
  try {
    const value = await write();
    for (const r of rows) unwritten.delete(r.callbackId);
    return value;
  } catch (error) {
    const e = error as { code?: string; name?: string; message?: string };
    span.setAttribute('error.type', e.code ?? e.name ?? 'Error');
    span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
    throw error;
  } finally {
    span.end();
  }
}

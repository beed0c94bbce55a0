import { ROOT_CONTEXT, trace, TraceFlags, type Context, type SpanContext, type Tracer } from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { AppConfig } from '../config/app.config.js';

/**
 * The service's tracer, or undefined while tracing is off. Every traced path tests
 * this first and does nothing else when it is off: no SDK is loaded, no span object
 * made, no header added, no column filled (the cost is one property read).
 * Module state, as OpenTelemetry's own global provider is: one process, one exporter.
 */
export const tracing: { tracer?: Tracer; shutdown: () => Promise<void> } = { shutdown: async () => undefined };

export const SERVICE_NAME = 'callback-dispatch';
const TRACES_PATH = '/v1/traces';

/** Where and how traces go, from the validated config; undefined when tracing is off. */
export function exportPlan(config: AppConfig): { exporter: 'otlp' | 'console'; url: string; protocol: 'http/protobuf' | 'http/json' } | undefined {
  if (config.otelSdkDisabled === 'true') return undefined;
  const named = (config.otelTracesExporter ?? []).filter((e) => e !== 'none');
  const endpoint =
    config.otelExporterOtlpTracesEndpoint ?? (config.otelExporterOtlpEndpoint ? config.otelExporterOtlpEndpoint.replace(/\/$/, '') + TRACES_PATH : undefined);
  // Off unless asked for: an exporter named, or (OTEL_TRACES_EXPORTER unset) an endpoint given.
  const exporter = named.length > 0 ? (named.includes('otlp') ? 'otlp' : 'console') : config.otelTracesExporter ? undefined : endpoint && 'otlp';
  if (!exporter) return undefined;
  const protocol = (config.otelExporterOtlpTracesProtocol ?? config.otelExporterOtlpProtocol ?? 'http/protobuf') as 'http/protobuf' | 'http/json';
  return { exporter, url: endpoint ?? `http://localhost:4318${TRACES_PATH}`, protocol };
}

/**
 * Starts the OpenTelemetry SDK when the config asks for traces: a tracer provider
 * (its sampler from OTEL_TRACES_SAMPLER, default parent-based always-on), a batch
 * span processor (OTEL_BSP_*), and the OTLP/HTTP exporter for the chosen protocol,
 * each reading the rest of its standard variables itself. The SDK's modules are
 * imported only here, so a service without tracing never loads them.
 */
export async function startTracing(config: AppConfig): Promise<void> {
  const plan = exportPlan(config);
  if (!plan || tracing.tracer) return;
  const [{ BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter }, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
  ]);
  let exporter: SpanExporter;
  if (plan.exporter === 'console') exporter = new ConsoleSpanExporter();
  else if (plan.protocol === 'http/json') exporter = new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url: plan.url });
  else exporter = new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({ url: plan.url });
  // Our name unless OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES say otherwise (envDetector reads them).
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': SERVICE_NAME }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  tracing.tracer = provider.getTracer(SERVICE_NAME);
  tracing.shutdown = async () => {
    tracing.tracer = undefined;
    tracing.shutdown = async () => undefined;
    await provider.shutdown().catch(() => undefined); // spans the collector did not take at shutdown are lost; the exporter logs why
  };
}

/** A W3C traceparent header value for a span context. */
export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
}

/**
 * The context a stored or received traceparent continues, or the root context for
 * none or an invalid one (parsed by the SDK's W3C Trace Context code).
 */
export function contextFromTraceparent(value: string | null | undefined): Context {
  const sc = value ? parseTraceParent(value) : null;
  // Remote: it came from another process (the caller, or the API process that stored it).
  return sc ? trace.setSpanContext(ROOT_CONTEXT, { ...sc, isRemote: true }) : ROOT_CONTEXT;
}

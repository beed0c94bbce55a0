import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/app.config.js';
import { contextFromTraceparent, exportPlan, formatTraceparent } from './tracing.setup.js';
import { trace } from '@opentelemetry/api';

describe(exportPlan.name, () => {
  it.each([
    [{}, undefined],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, { exporter: 'otlp', url: 'http://c:4318/v1/traces', protocol: 'http/protobuf' }],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
      { exporter: 'otlp', url: 'http://c:4318/v1/traces', protocol: 'http/json' },
    ],
    [
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/t',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      },
      { exporter: 'otlp', url: 'http://c/t', protocol: 'http/protobuf' },
    ],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, { exporter: 'otlp', url: 'http://localhost:4318/v1/traces', protocol: 'http/protobuf' }],
    [{ OTEL_TRACES_EXPORTER: 'console' }, { exporter: 'console', url: 'http://localhost:4318/v1/traces', protocol: 'http/protobuf' }],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, undefined],
    [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, undefined],
  ])('should plan %j as %j', (env, plan) => {
    expect(exportPlan(loadConfig(env))).toEqual(plan);
  });

  it('should refuse grpc, naming the variable', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL="grpc".*grpc is not supported/);
  });
});

describe(contextFromTraceparent.name, () => {
  it('should continue a valid traceparent and format it back unchanged', () => {
    const value = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const sc = trace.getSpanContext(contextFromTraceparent(value))!;
    expect(sc).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', isRemote: true });
    expect(formatTraceparent(sc)).toBe(value);
  });

  it.each([null, '', 'garbage', '00-00000000000000000000000000000000-b7ad6b7169203331-01', 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'])(
    'should start a new trace for %j',
    (value) => {
      expect(trace.getSpanContext(contextFromTraceparent(value))).toBeUndefined();
    },
  );
});

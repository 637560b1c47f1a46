// Traces, through Temporal's OpenTelemetry plugin, exported over OTLP as the OTEL_* variables say.
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResourcesSync, envDetectorSync, Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Tracer } from '@opentelemetry/api';
import { LOCKWARDEN_TRACER } from './spans';

/** Tracing as configured: the plugin for clients and workers, and how to flush it at exit. */
export interface Tracing {
  /** Temporal's OpenTelemetry plugin: pass it in `plugins` of a Client and of a Worker. */
  plugin: OpenTelemetryPlugin;
  tracer: Tracer;
  /** Exports what is buffered and stops: call it before the process exits. */
  shutdown(): Promise<void>;
}

/**
 * Whether the OTEL_* variables ask for traces: an OTLP endpoint is set, the SDK is not disabled and
 * the traces exporter is not `none`. Off unless configured, as the OpenTelemetry SDKs are.
 */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? 'otlp').split(',').map((e) => e.trim().toLowerCase());
  if (!exporters.includes('otlp')) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/**
 * Tracing for one process (`serviceName` unless OTEL_SERVICE_NAME says otherwise), or null when the
 * OTEL_* variables do not ask for it. It registers a global tracer provider with an async-context
 * manager, so lockwarden's spans in activities and lock calls nest under the plugin's. The exporter
 * reads its endpoint, headers, timeout and compression from the standard variables, and the batch
 * processor its queue and delay (OTEL_BSP_*).
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv, serviceName: string): Tracing | null {
  if (!tracingConfigured(env)) return null;
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': serviceName }))
    .merge(detectResourcesSync({ detectors: [envDetectorSync] }));
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesEndpoint(env) }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  return {
    plugin: new OpenTelemetryPlugin({ resource, spanProcessor }),
    tracer: provider.getTracer(LOCKWARDEN_TRACER),
    shutdown: () => provider.shutdown(),
  };
}

// Where spans go: the traces endpoint as given, or `/v1/traces` under the base endpoint, as the
// OTLP/HTTP exporter's own reading of the variables has it (read here from `env`, not process.env).
function tracesEndpoint(env: NodeJS.ProcessEnv): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  return `${env.OTEL_EXPORTER_OTLP_ENDPOINT!.trim().replace(/\/$/, '')}/v1/traces`;
}

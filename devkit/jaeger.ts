// Jaeger v2 (scripts/install-jaeger.sh) run by a test or a bench as its trace store: OTLP/HTTP in,
// traces in memory, the query API out, on ports of its own (compose/jaeger.yaml, ports from the env).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from './freePort';

const ROOT = path.join(__dirname, '..');

/** A span as Jaeger's query API (`/api/traces`) answers it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  /** Microseconds since the epoch. */
  startTime: number;
  /** Microseconds. */
  duration: number;
  references: { refType: 'CHILD_OF' | 'FOLLOWS_FROM'; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  processID: string;
}

/** A trace as Jaeger's query API answers it. */
export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

/** A running Jaeger: where to send spans, and how to find traces. */
export class Jaeger {
  private constructor(
    private readonly process: ChildProcess,
    /** OTLP/HTTP base URL: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
    readonly otlpEndpoint: string,
    /** The query API and UI's base URL. */
    readonly queryUrl: string,
  ) {}

  /** Starts Jaeger (building it once, from the Go module proxy) and waits until it is healthy. */
  static async start(): Promise<Jaeger> {
    const binary = execFileSync('bash', [path.join(ROOT, 'scripts', 'install-jaeger.sh')], {
      encoding: 'utf8',
    }).trim();
    const [otlp, query, grpc, health] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const child = spawn(binary, ['--config', path.join(ROOT, 'compose', 'jaeger.yaml')], {
      env: {
        ...process.env,
        JAEGER_OTLP_HTTP: `127.0.0.1:${otlp}`,
        JAEGER_QUERY_HTTP: `127.0.0.1:${query}`,
        JAEGER_QUERY_GRPC: `127.0.0.1:${grpc}`,
        JAEGER_HEALTH: `127.0.0.1:${health}`,
      },
      stdio: 'ignore',
    });
    const jaeger = new Jaeger(child, `http://127.0.0.1:${otlp}`, `http://127.0.0.1:${query}`);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const healthy = await fetch(`http://127.0.0.1:${health}/status`).then(
        (r) => r.ok,
        () => false,
      );
      if (healthy) return jaeger;
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`Jaeger did not start (exit code ${child.exitCode})`);
      await delay(100);
    }
  }

  /** The traces of `service` with a span tagged `tag` = `value`: the README's query. */
  async tracesTagged(service: string, tag: string, value: string): Promise<JaegerTrace[]> {
    const tags = encodeURIComponent(JSON.stringify({ [tag]: value }));
    const response = await fetch(`${this.queryUrl}/api/traces?service=${service}&tags=${tags}&limit=20`);
    if (!response.ok) throw new Error(`Jaeger answered HTTP ${response.status}`);
    return ((await response.json()) as { data: JaegerTrace[] }).data;
  }

  /** One trace by its id. */
  async trace(traceId: string): Promise<JaegerTrace> {
    const response = await fetch(`${this.queryUrl}/api/traces/${traceId}`);
    if (!response.ok) throw new Error(`Jaeger answered HTTP ${response.status} for trace ${traceId}`);
    return ((await response.json()) as { data: JaegerTrace[] }).data[0]!;
  }

  async stop(): Promise<void> {
    if (this.process.exitCode !== null) return;
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    this.process.kill('SIGTERM');
    await exited;
  }
}

/**
 * A trace as an indented tree of its spans, in the order they started: each line the span's name,
 * its start and duration in ms (from the trace's first span), and the attributes named `keep`; a link
 * (FOLLOWS_FROM) is shown as "→ linked to" and the linked span's trace.
 */
export function spanTree(
  trace: JaegerTrace,
  keep: (key: string) => boolean = (k) => k.startsWith('lockwarden.'),
): string {
  const spans = [...trace.spans].sort((a, b) => a.startTime - b.startTime);
  const t0 = spans[0]?.startTime ?? 0;
  const ids = new Set(spans.map((s) => s.spanID));
  const parentOf = (s: JaegerSpan) =>
    s.references.find((r) => r.refType === 'CHILD_OF' && ids.has(r.spanID))?.spanID;
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const span of spans.filter((s) => parentOf(s) === parent)) {
      const tags = span.tags
        .filter((t) => keep(t.key))
        .map((t) => `${t.key.replace(/^lockwarden\./, '')}=${String(t.value)}`);
      const links = span.references
        .filter((r) => r.refType === 'FOLLOWS_FROM')
        .map((r) => `→ linked to span ${r.spanID} of trace ${r.traceID}`);
      const at = `+${((span.startTime - t0) / 1000).toFixed(1)} ms, ${(span.duration / 1000).toFixed(1)} ms`;
      lines.push(
        `${'  '.repeat(depth)}${span.operationName} (${at}) ${[...tags, ...links].join(' ')}`.trimEnd(),
      );
      walk(span.spanID, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n');
}

// `node --import tsx devkit/jaeger.ts <query URL> <service> <session id>`: the docs' query, and the
// span tree of each trace it finds.
if (require.main === module) {
  const [queryUrl, service, sessionId] = process.argv.slice(2);
  const tags = encodeURIComponent(JSON.stringify({ 'lockwarden.session_id': sessionId }));
  void fetch(`${queryUrl}/api/traces?service=${service}&tags=${tags}`)
    .then((r) => r.json() as Promise<{ data: JaegerTrace[] }>)
    .then(({ data }) => {
      for (const trace of data) console.log(`trace ${trace.traceID}\n${spanTree(trace)}\n`);
    });
}

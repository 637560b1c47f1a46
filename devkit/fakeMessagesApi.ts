// A loopback fake of Anthropic's Messages API, for the real SDK in tests and benches.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DECISION_TOOL_NAME } from '../policy/decisions/retryPrompt';

/** One scripted answer of the fake Messages API. */
export type FakeAnswer =
  | { kind: 'tool'; input: unknown; stopReason?: string }
  | { kind: 'text'; text: string; stopReason?: string }
  | { kind: 'content'; content: unknown[]; stopReason: string }
  | { kind: 'http-error'; status: number; errorType: string; headers?: Record<string, string> }
  | { kind: 'slow'; delayMs: number; then: FakeAnswer }
  /** A body sent as is: what a misconfigured proxy or a broken server answers. */
  | { kind: 'raw'; status: number; contentType: string; body: string }
  | { kind: 'drop' };

/** A request the fake received: its parsed JSON body and its headers. */
export interface ReceivedRequest {
  body: { model: string; system?: string; messages: { role: string; content: unknown }[]; tools?: unknown[] };
  rawBody: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * A loopback server that speaks the Anthropic Messages API well enough for the real SDK, answering
 * each request with the next scripted answer (the last one repeats), and recording every request.
 */
export class FakeMessagesApi {
  readonly requests: ReceivedRequest[] = [];
  private script: FakeAnswer[] = [];
  private readonly server = http.createServer((req, res) => void this.handle(req, res));

  /** Starts listening on an ephemeral loopback port. */
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** The base URL to give the SDK. */
  get baseURL(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Replaces the script and forgets earlier requests. */
  answer(...script: FakeAnswer[]): void {
    this.script = script;
    this.requests.length = 0;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not found' } }));
      return;
    }
    this.requests.push({
      body: JSON.parse(rawBody) as ReceivedRequest['body'],
      rawBody,
      headers: req.headers,
    });
    const answer = this.script[Math.min(this.requests.length - 1, this.script.length - 1)];
    if (!answer) throw new Error('fake Messages API: no answer scripted');
    await this.respond(answer, req, res);
  }

  private async respond(
    answer: FakeAnswer,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    switch (answer.kind) {
      case 'drop':
        req.socket.destroy();
        return;
      case 'slow':
        await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
        if (!res.destroyed && !req.socket.destroyed) await this.respond(answer.then, req, res);
        return;
      case 'raw':
        res.writeHead(answer.status, { 'content-type': answer.contentType }).end(answer.body);
        return;
      case 'http-error':
        res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(
          JSON.stringify({
            type: 'error',
            error: { type: answer.errorType, message: `fake ${answer.errorType}` },
          }),
        );
        return;
      default: {
        const content =
          answer.kind === 'tool'
            ? [
                {
                  type: 'tool_use',
                  id: `toolu_${this.requests.length}`,
                  name: DECISION_TOOL_NAME,
                  input: answer.input,
                },
              ]
            : answer.kind === 'text'
              ? [{ type: 'text', text: answer.text }]
              : answer.content;
        const stopReason = answer.stopReason ?? (answer.kind === 'tool' ? 'tool_use' : 'end_turn');
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: `msg_${this.requests.length}`,
            type: 'message',
            role: 'assistant',
            model: 'fake-model',
            content,
            stop_reason: stopReason,
            stop_sequence: null,
            usage: { input_tokens: 10, output_tokens: 10 },
          }),
        );
      }
    }
  }
}

// One TLS handshake with a server, to learn why a client library's connection failed: gRPC clients
// (Temporal's, etcd's) report a refused handshake only as "no connection established".
import tls from 'node:tls';

/** What to present and trust in the handshake. */
export interface TlsProbeSettings {
  ca?: Uint8Array;
  cert?: Uint8Array;
  key?: Uint8Array;
  servername?: string;
}

/**
 * Connects to `host:port` over TLS and waits a moment after the handshake (a TLS 1.3 server refuses
 * a client certificate after the client's side has finished). Resolves with the error's code (e.g.
 * SELF_SIGNED_CERT_IN_CHAIN, ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED, ECONNREFUSED), or null when
 * the handshake went through or nothing answered within 3 s.
 */
export function probeTls(host: string, port: number, settings: TlsProbeSettings): Promise<string | null> {
  const bytes = (data: Uint8Array | undefined) => (data ? Buffer.from(data) : undefined);
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port,
      // SNI carries host names only; an address is checked against the certificate's IP names.
      servername: settings.servername ?? (/^[\d.:]+$/.test(host) ? '' : host),
      ca: bytes(settings.ca),
      cert: bytes(settings.cert),
      key: bytes(settings.key),
      ALPNProtocols: ['h2'],
    });
    const done = (answer: string | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(null), 3_000);
    socket.once('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
    socket.once('secureConnect', () => setTimeout(() => done(null), 500));
  });
}

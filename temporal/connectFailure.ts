// Why a connection to Temporal failed, in words an operator can act on: a TLS handshake that the
// server or the client refused is probed again with node:tls, whose errors name the cause.
import { probeTls } from './tlsProbe';
import type { TemporalTarget } from './connectionProfile';

/** Temporal could not be reached, or refused the connection; the message says which and why. */
export class TemporalConnectError extends Error {
  override readonly name = 'TemporalConnectError';
  constructor(
    message: string,
    readonly address: string,
  ) {
    super(message);
  }
}

// OpenSSL's reasons, as node:tls reports them, and what each means here.
const REASONS: [RegExp, string][] = [
  [
    /CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE/i,
    "the server requires a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH and _KEY_PATH, or the profile's tls.client_cert_path)",
  ],
  [
    /UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN/i,
    'the server does not trust the client certificate (it is not from a CA the server accepts)',
  ],
  [
    /SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|CERT_UNTRUSTED/i,
    "the server's certificate is not from a CA this client trusts (TEMPORAL_TLS_SERVER_CA_CERT_PATH)",
  ],
  [
    /ERR_TLS_CERT_ALTNAME_INVALID|HOSTNAME_MISMATCH/i,
    "the server's certificate is not for this address (TEMPORAL_TLS_SERVER_NAME)",
  ],
  [
    /WRONG_VERSION_NUMBER|EPROTO/i,
    'the server does not speak TLS here (unset TEMPORAL_TLS, or use its TLS port)',
  ],
];

/** Runs `connect`; a failure becomes a {@link TemporalConnectError} that says why. */
export async function connectOrExplain<T>(target: TemporalTarget, connect: () => Promise<T>): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    throw await explain(target, error);
  }
}

async function explain(target: TemporalTarget, error: unknown): Promise<TemporalConnectError> {
  const { address, tls: tlsConfig } = target.connectionOptions;
  const original = error instanceof Error ? error.message : String(error);
  const prefix = `cannot connect to Temporal at ${address}${tlsConfig ? ' over TLS' : ''}`;
  if (!tlsConfig) return new TemporalConnectError(`${prefix}: ${original}`, address);
  const probed = await probe(address, tlsConfig === true ? {} : tlsConfig);
  const reason = probed && REASONS.find(([pattern]) => pattern.test(probed))?.[1];
  return new TemporalConnectError(
    `${prefix}: ${reason ?? original}${probed ? ` (TLS: ${probed})` : ''}`,
    address,
  );
}

type TlsSettings = Exclude<TemporalTarget['connectionOptions']['tls'], boolean | undefined>;

// The handshake Temporal's client made, made again where its error can be read.
function probe(address: string, settings: TlsSettings): Promise<string | null> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  return probeTls(host, Number(address.slice(at + 1)), {
    ca: settings.serverRootCACertificate,
    cert: settings.clientCertPair?.crt,
    key: settings.clientCertPair?.key,
    ...(settings.serverNameOverride ? { servername: settings.serverNameOverride } : {}),
  });
}

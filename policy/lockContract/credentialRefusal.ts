// Telling a refused credential or permission apart from an outage, in each backend driver's words.
import { LockServiceCredentialsRefusedError } from '../errors';
import { redact } from '../textSafety/redaction';
import { untrustedText } from '../textSafety/untrustedText';

// PostgreSQL's SQLSTATE class 28 (invalid authorization: a bad password, an unknown role, a
// pg_hba.conf refusal) and 42501 (insufficient privilege on lockwarden's tables).
const POSTGRES_CODES = new Set(['28000', '28P01', '42501']);
// Redis: AUTH refused (WRONGPASS), a command before AUTH (NOAUTH), an ACL without the command (NOPERM).
const REDIS_REPLY = /^(WRONGPASS|NOAUTH|NOPERM)\b/;
// etcd3's typed errors, and gRPC's UNAUTHENTICATED (16) and PERMISSION_DENIED (7).
const ETCD_NAMES = new Set([
  'EtcdAuthenticationFailedError',
  'EtcdInvalidAuthTokenError',
  'EtcdPermissionDeniedError',
  'EtcdRoleNotGrantedError',
  'EtcdUserNotFoundError',
]);
// TLS: the server's certificate is not from the CA the URL names, or the server refuses the client's
// certificate. Neither mends itself with time, so both stop a worker at start like a wrong password.
const TLS_CODES =
  /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_HAS_EXPIRED|CERT_UNTRUSTED|ERR_TLS_CERT_ALTNAME_INVALID|ERR_SSL_.*ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_REQUIRED|CERTIFICATE_UNKNOWN))$/;
// The same refusals as gRPC (etcd's client) reports them: in the words of the status's details.
const TLS_WORDS =
  /self[- ]signed certificate|unable to verify the first certificate|unable to get (local )?issuer certificate|alert unknown ca|alert certificate required|alert bad certificate|certificate has expired|does not match certificate's altnames/i;
// SQLite: the file cannot be written for want of permission.
const SQLITE_CODES = new Set(['SQLITE_PERM', 'SQLITE_AUTH', 'SQLITE_READONLY', 'EACCES']);

/**
 * The refused credential or permission behind `error` (a driver's error or its causes), as a short
 * redacted description, or null when the error is something else (an outage, bad input, a bug).
 */
export function credentialRefusal(error: unknown): string | null {
  for (let e: unknown = error; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown };
    const text = typeof message === 'string' ? message : '';
    const refused =
      (typeof code === 'string' &&
        (POSTGRES_CODES.has(code) || SQLITE_CODES.has(code) || TLS_CODES.test(code))) ||
      TLS_WORDS.test(text) ||
      (typeof name === 'string' && ETCD_NAMES.has(name)) ||
      // etcd3's errors leave `name` as "Error": their class says which they are.
      ETCD_NAMES.has((e as object).constructor?.name ?? '') ||
      REDIS_REPLY.test(text) ||
      ((code === 16 || code === 7) && /UNAUTHENTICATED|PERMISSION_DENIED/.test(text));
    if (refused) {
      const what = typeof code === 'string' ? `${code}: ` : '';
      return untrustedText(redact(`${what}${text}`).text, 240);
    }
  }
  return null;
}

/** Runs `call`; a refused credential or permission is rethrown as LockServiceCredentialsRefused. */
export async function credentialsChecked<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const refusal = credentialRefusal(error);
    if (refusal !== null) throw new LockServiceCredentialsRefusedError(refusal);
    throw error;
  }
}

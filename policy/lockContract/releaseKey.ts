// The release capability: a secret only a lease's acquirer holds, and the digest a session keeps of it.
import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

/**
 * A release key as callers pass it: 16 to 128 URL-safe characters (the client makes 43 from 32
 * random bytes; withLock makes a UUID). Like Redlock's random value, it is made by the acquirer and
 * kept by it; the session's history holds only its digest until the release uses it.
 */
const RELEASE_KEY_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;

/** A release key's digest, as a session keeps it: 64 lowercase hex digits of its SHA-256. */
export const RELEASE_KEY_DIGEST_PATTERN = /^[0-9a-f]{64}$/;

/**
 * The digest a session is started with. Pure JavaScript (noble's SHA-256), so a workflow's update
 * validator can check a release key without an activity, and the client computes the same digest.
 */
export function releaseKeyDigest(releaseKey: string): string {
  return bytesToHex(sha256(utf8ToBytes(releaseKey)));
}

/**
 * Why `releaseKey` does not open a lease whose session keeps `digest`, or null when it does. A session
 * started without a digest can be ended only by an operator's force-release.
 */
export function releaseKeyProblem(releaseKey: unknown, digest: string | undefined): string | null {
  if (digest === undefined)
    return 'this session was started without a release key: only an operator can take its lease away (lockctl force-release)';
  if (typeof releaseKey !== 'string' || !RELEASE_KEY_PATTERN.test(releaseKey))
    return 'releaseKey: must be the release key its acquirer was given (16 to 128 characters A-Z a-z 0-9 _ -)';
  if (releaseKeyDigest(releaseKey) !== digest) return 'releaseKey: not the release key of this lease';
  return null;
}

/**
 * The memo field a session is started with that holds its release key's digest: a memo, not the
 * request, so a worker of an earlier release (whose request schema is strict) still takes the session.
 */
export const RELEASE_KEY_MEMO = 'lockwardenReleaseKeyDigest';

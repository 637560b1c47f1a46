/** The outcome of a fenced write: done, or refused because a newer token has already written. */
export type FencedWriteResult<T> = { accepted: true; value: T } | { accepted: false; newestToken: string };

/**
 * What a protected resource uses to refuse a write whose fencing token is older than the newest it
 * has accepted. The token check, the record of the newest token and the write itself commit in one
 * transaction, so a stale holder (paused past its lease, then resumed) cannot slip a write in after
 * the new holder's. Equal tokens are accepted: one holder may write several times.
 */
export interface FencedResource<Tx> {
  /** Runs `write` inside the resource's transaction if `token` is at least the newest accepted one. */
  write<T>(resource: string, token: string, write: (tx: Tx) => T): Promise<FencedWriteResult<Awaited<T>>>;
  /** The newest token the resource has accepted, or null before the first write. */
  newestToken(resource: string): Promise<string | null>;
  /** Every write attempted on `resource`, accepted or refused, in commit order. */
  attempts(resource: string): Promise<FencedWriteAttempt[]>;
}

/** One fenced write as the resource recorded it, at its own clock's time. */
export interface FencedWriteAttempt {
  resource: string;
  token: string;
  accepted: boolean;
  /** The newest accepted token once the attempt was decided (its own, when accepted). */
  newestToken: string;
  at: number;
}

/** Thrown when a fenced write is attempted with something that is not a token the lock service issued. */
export class InvalidFencingTokenError extends Error {
  override readonly name = 'InvalidFencingToken';
  constructor(token: unknown) {
    super(
      `fencing token must be a positive decimal integer issued by the lock service, got ${JSON.stringify(token)}`,
    );
  }
}

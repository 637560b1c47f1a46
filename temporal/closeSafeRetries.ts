// A connection whose gRPC retries end with it: a retry due after Connection.close() fails its call
// instead of throwing out of a timer and killing the process.
import {
  Connection,
  type ConnectionOptions,
  type ConnectionPlugin,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
} from '@temporalio/client';
import { type Interceptor, InterceptingCall, Metadata, status } from '@grpc/grpc-js';

/** What grpc-js throws when a closed channel is asked for a call. */
const CLOSED_CHANNEL = 'Channel has been shut down';

/**
 * The client's retry interceptor schedules each retry with a timer that Connection.close() does not
 * clear. A retry that fires after the close asks the closed channel for a call, which throws
 * "Channel has been shut down" inside the timer: an uncaught exception, with no caller to catch it.
 * lockctl, a worker shutting down during an outage and the test suites all close connections while
 * a call may be backing off. This interceptor sits last, next to the channel: when the channel
 * refuses a new call, the attempt ends as CANCELLED (which the retry interceptor does not retry),
 * and the caller's promise is rejected instead.
 */
export const refuseCallsAfterClose: Interceptor = (options, nextCall) => {
  try {
    return new InterceptingCall(nextCall(options));
  } catch (error) {
    if (!String(error).includes(CLOSED_CHANNEL)) throw error;
    const details = `the connection to Temporal was closed: ${String(error)}`;
    return new InterceptingCall(unstartedCall(), {
      start(_metadata, listener) {
        // Answer on a later tick, as a real call would: the caller has not finished starting it. A
        // unary call that ends without a message reports a null one first (grpc-js does so), and
        // the retry interceptor counts on it: without it, its final answer throws a TypeError.
        setImmediate(() => {
          listener.onReceiveMessage(null);
          listener.onReceiveStatus({ code: status.CANCELLED, details, metadata: new Metadata() });
        });
      },
      sendMessage() {},
      halfClose() {},
      cancel() {},
    });
  }
};

// The call below a refused one: its requester never reaches it, so it does nothing.
function unstartedCall(): ConstructorParameters<typeof InterceptingCall>[0] {
  const nothing = () => undefined;
  return {
    cancelWithStatus: nothing,
    getPeer: () => '',
    start: nothing,
    sendMessageWithContext: nothing,
    sendMessage: nothing,
    startRead: nothing,
    halfClose: nothing,
    getAuthContext: () => null,
  };
}

/** The connection's interceptors (the SDK's default retries unless given) with the guard last. */
export function closeSafeInterceptors(interceptors?: Interceptor[]): Interceptor[] {
  return [...(interceptors ?? [makeGrpcRetryInterceptor(defaultGrpcRetryOptions())]), refuseCallsAfterClose];
}

/**
 * A connection plugin that adds {@link refuseCallsAfterClose}: pass it in `plugins` of
 * Connection.connect (lockwarden's own clients do).
 */
export const closeSafeRetries: ConnectionPlugin = {
  name: 'lockwarden-close-safe-retries',
  configureConnection(options: ConnectionOptions): ConnectionOptions {
    return { ...options, interceptors: closeSafeInterceptors(options.interceptors) };
  },
};

/** Connection.connect with {@link closeSafeRetries} added: how lockwarden connects its own clients. */
export function connectTemporal(options: ConnectionOptions): Promise<Connection> {
  return Connection.connect({ ...options, plugins: [...(options.plugins ?? []), closeSafeRetries] });
}

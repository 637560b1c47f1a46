// A call Temporal's authorizer refused, said as the namespace permission the operation needs.
import { status } from '@grpc/grpc-js';

/** The namespace roles of Temporal's default authorizer that lockwarden's operations need. */
export type NamespacePermission = 'read' | 'write';

/**
 * Temporal refused an operation for want of permission (gRPC PERMISSION_DENIED): the API key or
 * client certificate in use does not grant `permission` on `namespace`. lockctl exits with 7.
 */
export class PermissionDeniedError extends Error {
  override readonly name = 'PermissionDenied';
  constructor(
    readonly operation: string,
    readonly namespace: string,
    readonly permission: NamespacePermission,
  ) {
    super(
      `permission denied: ${operation} needs ${permission} permission on namespace "${namespace}", ` +
        'which the API key or client certificate in use does not grant',
    );
  }
}

/** Whether `error`, or an error it was caused by, is Temporal's PERMISSION_DENIED. */
export function isDeniedByTemporal(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++)
    if ((e as { code?: unknown }).code === status.PERMISSION_DENIED) return true;
  return false;
}

/** A lockctl command's needs: the reading ones need `read`; the rest start, signal or update sessions. */
export function permissionOf(command: string, subcommand?: string): NamespacePermission {
  if (['list', 'status', 'state', 'postmortem'].includes(command)) return 'read';
  if (command === 'model' && (subcommand === undefined || subcommand === 'status')) return 'read';
  return 'write';
}

// The workflow bundle's entry point: every workflow the worker registers.
export { acquireLock } from './acquireLock';
export { releaseLock } from './releaseLock';
export { lockStatus } from './lockStatus';
export { holdLockFor } from './withLock';
export { postmortemBriefing } from './postmortemBriefing';

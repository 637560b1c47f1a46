// `lockwarden/fencing`: what a protected resource uses to refuse a write whose fencing token is older
// than the newest it has accepted. Its own entry point, since its types name the database drivers
// (better-sqlite3, and pg for PostgresFencedResource, which only those who use it install).
export {
  type FencedResource,
  type FencedWriteAttempt,
  type FencedWriteResult,
  InvalidFencingTokenError,
} from '../locks/fencedResource';
export { SqliteFencedResource } from '../locks/sqliteFencedResource';
export { PostgresFencedResource } from '../locks/postgresFencedResource';

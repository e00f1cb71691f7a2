// Kept apart from connect.ts (which sets pg's type parsers for the whole process) so that a
// tool outside the service, such as the bench, can match the same names.

/**
 * What a session of this service calls itself in PostgreSQL (`application_name`, shown by
 * `pg_stat_activity` and by a server log whose prefix has `%a`): which part of which process
 * holds the connection, e.g. `lead-intake worker (pid 4242)`.
 */
export function sessionName(part: string, pid: number = process.pid): string {
  return `lead-intake ${part} (pid ${pid})`;
}

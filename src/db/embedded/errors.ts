/**
 * The embedded database could not be started or joined. The message says what happened and
 * what to do; entry points print it as it is, without a stack trace.
 */
export class EmbeddedDatabaseError extends Error {
  constructor(what: string, whatToDo = USE_A_SERVER) {
    super(`${what} ${whatToDo}`.trim());
    this.name = 'EmbeddedDatabaseError';
  }
}

export const USE_A_SERVER = 'Or set DATABASE_URL to use a PostgreSQL server instead of the embedded one.';

/** `ENOSPC: no space left on device, mkdir '/x'` -> a sentence an operator can act on. */
export function fileSystemProblem(action: string, target: string, error: unknown): EmbeddedDatabaseError {
  const code = (error as { code?: string }).code;
  const reason =
    {
      EACCES: 'permission denied',
      EPERM: 'operation not permitted',
      EROFS: 'the file system is read-only',
      ENOSPC: 'no space left on device',
      ENOTDIR: 'a part of the path is a file, not a directory',
      ENOENT: 'a part of the path does not exist',
      EEXIST: 'it exists and is not a directory',
    }[code ?? ''] ?? (error instanceof Error ? error.message : String(error));
  return new EmbeddedDatabaseError(
    `The embedded PostgreSQL cannot ${action} ${target}: ${reason}.`,
    `Free the space or fix the permissions, point EMBEDDED_PG_DIR at a writable directory, or set DATABASE_URL to use a PostgreSQL server.`,
  );
}

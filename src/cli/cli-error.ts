import type { Executor } from '../db/connect.js';
import { findWorkspace } from '../workspaces/repository.js';

// A refused command: printed as `{ "error": code, "message": text }` on stderr, exit code 1.
export class CliError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

export function positiveId(value: string, flag: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new CliError('invalid_argument', `${flag} must be a positive integer id, got "${value}".`);
  }
  return Number(value);
}

export function nonEmpty(value: string, flag: string, maxLength = 255): string {
  const trimmed = value.trim();
  if (trimmed.length === 0) throw new CliError('invalid_argument', `${flag} must not be empty.`);
  if (trimmed.length > maxLength) throw new CliError('invalid_argument', `${flag} must be at most ${maxLength} characters.`);
  return trimmed;
}

export async function requireWorkspace(db: Executor, value: string) {
  const workspace = await findWorkspace(db, positiveId(value, '--workspace'));
  if (!workspace) throw new CliError('not_found', `Workspace ${value} does not exist.`);
  return workspace;
}

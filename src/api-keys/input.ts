import { scopeValues, type Scope } from '../../generated/api.js';
import { invalidInput } from '../input.js';

// An API key's settings as an operator types them.

/** Scopes by name, each once; an unknown one is refused, naming the allowed ones. */
export function parseScopes(values: readonly string[]): Scope[] {
  const unknown = values.filter((scope) => !(scopeValues as readonly string[]).includes(scope));
  if (unknown.length > 0) throw invalidInput(`Unknown scope(s): ${unknown.join(', ')}. Allowed: ${scopeValues.join(', ')}.`);
  return [...new Set(values)] as Scope[];
}

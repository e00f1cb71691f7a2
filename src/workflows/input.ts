import type { WorkflowTrigger } from '../db/schema.js';
import { invalidInput } from '../input.js';

// A workflow's settings as an operator types them (its block's webhook settings are the
// connectors' rules, src/connectors/input.ts).

export function parseTrigger(value: string, flag: string): WorkflowTrigger {
  if (value !== 'lead_created' && value !== 'tag_added') throw invalidInput(`${flag} must be lead_created or tag_added, got "${value}".`);
  return value;
}

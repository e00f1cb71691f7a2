import { invalidInput } from '../input.js';
import type { Role } from './repository.js';

// A member's settings as an operator types them.

export function parseEmail(value: string, field: string): string {
  const email = value.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) throw invalidInput(`${field} must be an email address, got "${value}".`);
  return email;
}

export function parseRole(value: string | undefined, field: string): Role {
  if (value === undefined) return 'admin';
  if (value !== 'admin' && value !== 'member') throw invalidInput(`${field} must be admin or member.`);
  return value;
}

import { storableText } from '../../storable-text.js';
import { ConsoleError, NOT_FOUND } from '../errors.js';

// Reading submitted forms and path ids: every value is a string or absent, whatever was sent,
// and text PostgreSQL cannot store (NUL, lone surrogates) is made storable as the API's is.

type Body = Record<string, unknown> | undefined;

/** A single field as text ('' when absent or sent several times). */
export function text(body: unknown, name: string): string {
  const value = (body as Body)?.[name];
  return typeof value === 'string' ? storableText(value) : '';
}

/** A field that may repeat (checkboxes, rows), as a list of strings. */
export function list(body: unknown, name: string): string[] {
  const value = (body as Body)?.[name];
  if (typeof value === 'string') return [storableText(value)];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string').map(storableText) : [];
}

export const checked = (body: unknown, name: string): boolean => text(body, name) !== '';

/** A path id: anything but a positive integer is a page that does not exist. */
export function pathId(value: unknown): number {
  if (typeof value !== 'string' || !/^[1-9]\d{0,15}$/.test(value) || !Number.isSafeInteger(Number(value))) throw new ConsoleError(404, NOT_FOUND);
  return Number(value);
}

/** Lines of `key=value` in a textarea, as the CLI's repeated `--flag key=value` arguments. */
export const pairLines = (value: string): string[] =>
  value
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);

/** A query parameter as a string or undefined. */
export const query = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? storableText(value) : undefined);

/** An id in the query (a filter, a page's cursor): anything but a positive integer is no filter. */
export const optionalId = (value: unknown): number | undefined => {
  const given = query(value);
  return given !== undefined && /^[1-9]\d{0,15}$/.test(given) ? Number(given) : undefined;
};

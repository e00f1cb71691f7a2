import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { publishedDocument } from '../../scripts/openapi-published.mjs';
import type { ContractDocuments } from '../../src/http/app.js';
import { OPENAPI_PATH } from '../../src/paths.js';

export type DocumentEdit = (document: ReturnType<typeof parseDocument>) => void;

/**
 * A copy of openapi/openapi.yaml with `edit` applied, and the published document built from
 * it as `npm run generate` would, in a directory of their own (removed by `remove`): what a
 * test serves (startTestApp's `documents`) or mocks (startPrism's document) to see a contract
 * change that the real document does not make.
 */
export function contractCopy(edit: DocumentEdit): ContractDocuments & { remove(): void } {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'contract-copy-'));
  const document = parseDocument(readFileSync(OPENAPI_PATH, 'utf8'));
  edit(document);
  const text = document.toString({ lineWidth: 0 });
  const documents = { source: path.join(directory, 'openapi.yaml'), published: path.join(directory, 'openapi.published.yaml') };
  writeFileSync(documents.source, text);
  writeFileSync(documents.published, publishedDocument(text));
  return { ...documents, remove: () => rmSync(directory, { recursive: true, force: true }) };
}

/** Marks the item at `at` (an operation, a parameter, a property) deprecated, since and until the dates given. */
export const deprecate =
  (at: Array<string | number>, since: string, sunset: string): DocumentEdit =>
  (document) => {
    document.setIn([...at, 'deprecated'], true);
    document.setIn([...at, 'x-deprecated-since'], since);
    document.setIn([...at, 'x-sunset'], sunset);
  };

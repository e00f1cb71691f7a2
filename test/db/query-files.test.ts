import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { QUERIES_DIRECTORY, renderQueryFiles } from '../../scripts/queries.js';

// src/queries/ holds the SQL of every prepared statement as checked in; it must be what the
// code sends, so that a reviewer reading a diff of SQL reads the change that ships.

describe('the checked-in SQL of the prepared statements (src/queries/)', () => {
  it('is exactly what the code builds, one file per repository: run `npm run queries` after changing a statement', () => {
    const rendered = renderQueryFiles();
    const checkedIn = readdirSync(QUERIES_DIRECTORY).filter((file) => file.endsWith('.sql'));
    expect(checkedIn.sort()).toEqual([...rendered.keys()].sort());
    for (const [file, content] of rendered) expect({ file, content: readFileSync(path.join(QUERIES_DIRECTORY, file), 'utf8') }).toEqual({ file, content });
  });

  it('covers the statements of the write path, the reads and the worker, each file named after a repository that exists', () => {
    for (const file of renderQueryFiles().keys())
      expect({ file, exists: existsSync(path.join(QUERIES_DIRECTORY, '..', `${file.replace(/\.sql$/, '').replaceAll('.', '/')}.ts`)) }).toEqual({ file, exists: true });
    const names = [...renderQueryFiles().values()].flatMap((content) => [...content.matchAll(/^-- ([A-Z_]+)$/gm)].map((match) => match[1]));
    expect(names).toEqual(
      expect.arrayContaining(['NEW_LEAD_RECORDS_ALONE', 'MERGE_INTO_LEADS', 'INTAKE_LOOKUP', 'LEAD_RECORDS', 'ADD_DAILY_COUNTS', 'CLAIM_DUE', 'RECORD_ATTEMPTS']),
    );
  });
});

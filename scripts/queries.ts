// The SQL of every prepared statement, checked in under src/queries/ (one file per repository,
// each statement ending with `;`), so a change to a statement shows in review as a diff of SQL.
// `npm run queries` rewrites the files; test/db/query-files.test.ts fails when they differ from
// what the code sends.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { format } from 'sql-formatter';
// The composition roots load every repository, and each repository builds its statements as it loads.
import '../src/context.js';
import '../src/worker/context.js';
import { preparedStatements } from '../src/db/prepared.js';

export const QUERIES_DIRECTORY = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'queries');

/** The statement's text laid out for reading (the text sent differs only in white space). */
const readable = (text: string): string => format(text, { language: 'postgresql', keywordCase: 'preserve', tabWidth: 2 });

/** File name -> content of every query file, as the code builds its statements now. */
export function renderQueryFiles(): Map<string, string> {
  const byRepository = new Map<string, string[]>();
  for (const { id, text } of preparedStatements()) {
    const statements = byRepository.get(id.repository) ?? [];
    statements.push(`-- ${id.name}\n${readable(text)};\n`);
    byRepository.set(id.repository, statements);
  }
  return new Map(
    [...byRepository]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([repository, statements]) => [
        `${repository.replaceAll('/', '.')}.sql`,
        `-- The prepared statements of src/${repository}.ts, as sent (laid out by sql-formatter). Written by \`npm run queries\`: do not edit.\n\n${statements.join('\n')}`,
      ]),
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  mkdirSync(QUERIES_DIRECTORY, { recursive: true });
  const files = renderQueryFiles();
  for (const stale of readdirSync(QUERIES_DIRECTORY).filter((file) => file.endsWith('.sql') && !files.has(file))) rmSync(path.join(QUERIES_DIRECTORY, stale));
  for (const [file, content] of files) writeFileSync(path.join(QUERIES_DIRECTORY, file), content);
  process.stdout.write(`wrote ${files.size} query files to src/queries/\n`);
}

import { isUtf8 } from 'node:buffer';
import { parse } from 'csv-parse/sync';
import { Refused } from '../refused.js';

// Reading an uploaded CSV file, all or nothing: a file this refuses leaves nothing behind.
// Parsing is csv-parse's (RFC 4180 quoting, CRLF or LF); this file only decides the encoding,
// the delimiter and the limits.

/** The largest file an import takes (20 MB) and the most rows it holds besides the header. */
export const IMPORT_MAX_BYTES = 20 * 1024 * 1024;
export const IMPORT_MAX_ROWS = 50_000;

export const DELIMITERS = { ',': 'comma', ';': 'semicolon', '\t': 'tab' } as const;
export type Delimiter = keyof typeof DELIMITERS;

export interface CsvFile {
  delimiter: Delimiter;
  columns: string[];
  rows: string[][];
}

const refuse = (message: string): never => {
  throw new Refused('invalid_argument', message);
};

/** The delimiter the header line uses most, outside quotes (comma when it has none). */
function detectDelimiter(text: string): Delimiter {
  const counts: Record<Delimiter, number> = { ',': 0, ';': 0, '\t': 0 };
  let quoted = false;
  for (const char of text) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === '\n' || char === '\r')) break;
    else if (!quoted && char in counts) counts[char as Delimiter] += 1;
  }
  return (Object.keys(counts) as Delimiter[]).reduce((best, each) => (counts[each] > counts[best] ? each : best), ',');
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** The longest header line read for its delimiter (csv-parse's own limit on a record). */
const MAX_RECORD_BYTES = 1_000_000;

/**
 * Decodes and parses the file, or refuses it with words a person can act on. The bytes are
 * checked as UTF-8 and parsed as they are, never copied whole into a string (csv-parse would
 * turn that back into bytes): an upload leaves the service no larger copy of itself than it came as.
 */
export function readCsvFile(file: Buffer): CsvFile {
  if (file.length > IMPORT_MAX_BYTES) refuse(`The file is larger than ${IMPORT_MAX_BYTES / 1024 / 1024} MB; split it into smaller files.`);
  if (file.includes(0)) refuse('This file is not a CSV text file (it holds binary data). Export it from your spreadsheet as CSV (UTF-8).');
  if (!isUtf8(file)) refuse('This file is not UTF-8 text. Save it from your spreadsheet as "CSV UTF-8" and upload it again.');
  const bytes = file.subarray(0, UTF8_BOM.length).equals(UTF8_BOM) ? file.subarray(UTF8_BOM.length) : file;
  if (bytes.every((byte) => byte === 0x20 || (byte >= 0x09 && byte <= 0x0d))) refuse('The file is empty: it needs a header line naming its columns, then one line per lead.');
  const delimiter = detectDelimiter(bytes.subarray(0, MAX_RECORD_BYTES).toString('utf8'));
  let records: string[][] = [];
  try {
    records = parse(bytes, { delimiter, relax_column_count_less: true, skip_empty_lines: true, max_record_size: MAX_RECORD_BYTES, to: IMPORT_MAX_ROWS + 2 }) as string[][];
  } catch (error) {
    const { code, lines } = error as { code?: string; lines?: number };
    if (code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH' || code === 'CSV_RECORD_DONT_MATCH_COLUMNS_LENGTH')
      refuse(`Line ${lines ?? '?'} has more fields than the header line: every line needs the header's columns, no more.`);
    refuse(`This file could not be read as CSV${lines ? ` (line ${lines})` : ''}: ${(error as Error).message}`);
  }
  const [header = [], ...rows] = records;
  const columns = header.map((name) => name.trim());
  if (columns.length === 0 || columns.every((name) => name === '')) refuse('The first line must name the columns (a header line such as "Name,Email").');
  if (columns.some((name) => name === '')) refuse('Every column of the header line needs a name; one is blank.');
  if (new Set(columns).size !== columns.length) refuse('Two columns of the header line have the same name; give each its own.');
  if (rows.length === 0) refuse('The file has a header line but no rows to import.');
  if (rows.length > IMPORT_MAX_ROWS) refuse(`The file has more than ${IMPORT_MAX_ROWS.toLocaleString('en')} rows; split it into smaller files.`);
  const wide = rows.findIndex((row) => row.length > columns.length);
  if (wide >= 0) refuse(`Row ${wide + 1} has more fields than the header line (${rows[wide]!.length} for ${columns.length} columns).`);
  // Short rows are padded in place: a copy of every row would double what the file's rows hold.
  for (const row of rows) while (row.length < columns.length) row.push('');
  return { delimiter, columns, rows };
}

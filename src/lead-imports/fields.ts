import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import type { LeadInput } from '../../generated/api.js';
import { OPENAPI_PATH } from '../paths.js';
import { Refused } from '../refused.js';

// What a column of an imported file becomes: one of the API's lead field paths, or nothing.
// A row becomes the LeadInput a POST /leads/batch row would be, checked against the contract's
// own schema before it is sent, so a row the API would refuse is a failed row with the
// validator's words.

export const IMPORT_FIELDS = [
  'ignore',
  'name',
  'email',
  'emails',
  'phone',
  'phones',
  'linkedin_url',
  'job_title',
  'location.country',
  'location.state',
  'location.city',
  'location.address',
  'location.zip_code',
  'company.name',
  'company.website',
  'company.linkedin_url',
  'company.industry',
  'company.size',
  'tags',
  'custom_fields',
] as const;
export type ImportField = (typeof IMPORT_FIELDS)[number];

export const isImportField = (value: string): value is ImportField => (IMPORT_FIELDS as readonly string[]).includes(value);

const CONTACT_FIELDS: readonly ImportField[] = ['email', 'emails', 'phone', 'phones', 'linkedin_url'];
const LIST_FIELDS: readonly ImportField[] = ['emails', 'phones', 'tags'];
const URL_FIELDS: readonly ImportField[] = ['linkedin_url', 'company.website', 'company.linkedin_url'];

/** Header words (lower-cased, without punctuation) each field is guessed from; the first field whose word a header is wins. */
const GUESSES: ReadonlyArray<readonly [ImportField, readonly string[]]> = [
  ['name', ['name', 'full name', 'fullname', 'contact', 'contact name', 'person']],
  ['email', ['email', 'e mail', 'mail', 'email address', 'e mail address', 'work email']],
  ['phone', ['phone', 'telephone', 'tel', 'mobile', 'phone number', 'cell']],
  ['linkedin_url', ['linkedin', 'linkedin url', 'linkedin profile']],
  ['job_title', ['job title', 'title', 'position', 'role']],
  ['location.country', ['country']],
  ['location.state', ['state', 'region', 'province']],
  ['location.city', ['city', 'town']],
  ['location.address', ['address', 'street']],
  ['location.zip_code', ['zip', 'zip code', 'postal code', 'postcode']],
  ['company.name', ['company', 'company name', 'organization', 'organisation', 'account']],
  ['company.website', ['website', 'company website', 'domain', 'url', 'web']],
  ['company.linkedin_url', ['company linkedin', 'company linkedin url']],
  ['company.industry', ['industry', 'sector']],
  ['company.size', ['size', 'company size', 'employees', 'headcount']],
  ['tags', ['tags', 'tag', 'labels']],
];

/** The field a header names, or `ignore`. */
export function guessField(header: string): ImportField {
  const words = header
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
  return GUESSES.find(([, names]) => names.includes(words))?.[0] ?? 'ignore';
}

export type Mapping = ImportField[];

/** Refuses a mapping that could never make a lead: no column for the name, or none for a contact detail. */
export function checkMapping(mapping: Mapping): void {
  if (!mapping.includes('name')) throw new Refused('invalid_argument', 'Map a column to name: every lead needs one.');
  if (!mapping.some((field) => CONTACT_FIELDS.includes(field)))
    throw new Refused('invalid_argument', 'Map a column to a contact detail (email, emails, phone, phones or linkedin_url): every lead needs one.');
}

/** A list cell: values separated by commas, semicolons or line breaks. */
const listOf = (cell: string) =>
  cell
    .split(/[,;\n]/)
    .map((item) => item.trim())
    .filter(Boolean);

/** A web address without a scheme (`acme.com`), as spreadsheets hold them, gets https. */
const withScheme = (cell: string) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(cell) ? cell : `https://${cell}`);

/** The LeadInput of one row: empty cells are not sent; `tags` adds the job's tags to every row. */
export function leadOf(columns: readonly string[], mapping: Mapping, cells: readonly string[], tags: readonly string[]): LeadInput {
  const lead: Record<string, unknown> = {};
  const nested = (key: 'location' | 'company') => (lead[key] ??= {}) as Record<string, unknown>;
  const listed = (key: string) => (lead[key] ??= []) as string[];
  mapping.forEach((field, index) => {
    const cell = cells[index]?.trim() ?? '';
    if (field === 'ignore' || cell === '') return;
    if (LIST_FIELDS.includes(field)) listed(field).push(...listOf(cell));
    else if (field === 'custom_fields') ((lead.custom_fields ??= {}) as Record<string, string>)[columns[index]!] = cell;
    else {
      const value = URL_FIELDS.includes(field) ? withScheme(cell) : cell;
      const [head, key] = field.split('.') as [string, string | undefined];
      if (key) nested(head as 'location' | 'company')[key] = value;
      else lead[head] = value;
    }
  });
  if (tags.length > 0) listed('tags').push(...tags);
  return lead as unknown as LeadInput;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
let validator: ((lead: unknown) => string | null) | null = null;

/** Checks a row against the contract's LeadInput; the error is null when it passes. */
export function leadInputError(lead: LeadInput): string | null {
  if (!validator) {
    const document = parseYaml(readFileSync(OPENAPI_PATH, 'utf8')) as { components: unknown };
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    addFormats(ajv);
    ajv.addSchema({ $id: 'contract', components: document.components });
    const validate = ajv.compile({ $ref: 'contract#/components/schemas/LeadInput' });
    validator = (value) => {
      if (validate(value)) return null;
      const [first] = validate.errors ?? [];
      if (!first) return 'This row is not a valid lead.';
      if (first.keyword === 'required' && ['email', 'phone', 'linkedin_url', 'emails', 'phones'].includes(String(first.params.missingProperty)))
        return 'This row has no contact detail: it needs an email, a phone or a LinkedIn URL.';
      const where = first.instancePath.replace(/^\//, '').replaceAll('/', '.') || String(first.params.missingProperty ?? 'row');
      return `${where}: ${first.message ?? 'is not valid'}`;
    };
  }
  return validator(lead);
}

import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { OPENAPI_PATH, PUBLISHED_OPENAPI_PATH } from '../../src/paths.js';

// The service validates requests against the hand-written document (OPENAPI_PATH) and
// publishes the built one (PUBLISHED_OPENAPI_PATH). Both request bodies must accept and
// refuse exactly the same payloads: every documented example, and every combination of the
// contact fields (present, absent, empty arrays) with and without a switch, an unknown field
// and names an object prototype has, as a lead and as a batch row.

interface Document {
  components: { schemas: Record<string, unknown> };
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { examples?: Record<string, { value: unknown }> }> } }>>;
}
const load = (file: string) => parse(readFileSync(file, 'utf8')) as Document;
const source = load(OPENAPI_PATH);
const published = load(PUBLISHED_OPENAPI_PATH);

function validator(document: Document, schema: string) {
  const ajv = new Ajv2020.default({ strict: false, allErrors: false, validateSchema: false });
  addFormats.default(ajv);
  ajv.addSchema({ ...document, $id: 'openapi' });
  const validate = ajv.getSchema(`openapi#/components/schemas/${schema}`);
  if (!validate) throw new Error(`no schema ${schema}`);
  return (body: unknown) => validate(body) as boolean;
}

const CONTACTS: Record<string, unknown[]> = {
  email: ['ada@example.com', 'not an address'],
  phone: ['+44 20 7946 0958'],
  linkedin_url: ['https://www.linkedin.com/in/ada'],
  emails: [[], ['ada@example.com']],
  phones: [[], ['12345']],
};
const EXTRAS: Record<string, unknown>[] = [
  {},
  { dry_run: true },
  { favourite_colour: 'red' },
  { constructor: 'x' },
  { toString: 'x' },
  { '': 'x' },
  { job_title: 'x'.repeat(256) },
  { company: { name: 'Acme', stock_ticker: 'ACME' } },
  { tags: ['VIP'], custom_fields: { 'Is VIP': true } },
];

/** Every subset of contact fields with each of its values, beside each extra. */
function leads(): Record<string, unknown>[] {
  let bodies: Record<string, unknown>[] = [{ name: 'Ada Lovelace' }];
  for (const [field, values] of Object.entries(CONTACTS)) bodies = bodies.flatMap((body) => [body, ...values.map((value) => ({ ...body, [field]: value }))]);
  return [...bodies.flatMap((body) => EXTRAS.map((extra) => ({ ...body, ...extra }))), { email: 'ada@example.com' }, { name: ' ', email: 'ada@example.com' }];
}

function documentedExamples(path: string): unknown[] {
  return Object.values(source.paths[path]?.post?.requestBody?.content['application/json']?.examples ?? {}).map((example) => example.value);
}

describe('the published document accepts exactly what the validator accepts', () => {
  const cases: Array<[string, string, unknown[]]> = [
    ['POST /leads', 'LeadCreateRequest', [...leads(), ...documentedExamples('/api/v1/leads')]],
    ['a batch row', 'LeadInput', leads()],
    [
      'POST /leads/batch',
      'BatchRequest',
      [
        ...leads().map((lead) => ({ leads: [{ name: 'Bob', phone: '12345678' }, lead] })),
        ...leads()
          .slice(0, 50)
          .map((lead) => ({ leads: [lead], enrich: false })),
        { leads: [] },
        { leads: [{ name: 'Bob', phone: '12345678' }], favourite_colour: 'red' },
        ...documentedExamples('/api/v1/leads/batch'),
      ],
    ],
  ];

  it.each(cases)('%s (%s)', (_name, schema, bodies) => {
    const [bySource, byPublished] = [validator(source, schema), validator(published, schema)];
    const verdicts = bodies.map((body) => ({ body, accepted: bySource(body) }));
    // Both verdicts occur, so the comparison means something.
    expect(new Set(verdicts.map(({ accepted }) => accepted))).toEqual(new Set([true, false]));
    expect(verdicts.filter(({ body, accepted }) => byPublished(body) !== accepted)).toEqual([]);
  });

  it('spells every request body out as one object, and each contact branch names the field it requires', () => {
    expect(JSON.stringify(published)).not.toMatch(/"unevaluatedProperties"/);
    const rule = published.components.schemas.ContactRequirement as { anyOf: Array<{ required: string[]; properties: Record<string, unknown> }> };
    expect(rule.anyOf.map((branch) => [branch.required, Object.keys(branch.properties)])).toEqual(
      ['email', 'phone', 'linkedin_url', 'emails', 'phones'].map((field) => [[field], [field]]),
    );
  });
});

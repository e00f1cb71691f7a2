// Builds generated/limits.ts: the limits the OpenAPI document states, as values the code
// applies (types cannot carry a number like `maxItems`). The service and the client read
// them from there, so the document stays the only place each number is written.
import { parse } from 'yaml';

// Each limit and where the published document states it. A pointer that no longer leads to a
// positive integer fails the build: the document was reshaped, and this list must follow.
const LIMITS = [
  ['BATCH_MAX', 'Leads in one `POST /leads/batch`.', '/components/schemas/BatchRequest/properties/leads/maxItems'],
  ['MAX_EMAILS', 'Addresses in `emails`, also after `email` is merged in.', '/components/schemas/LeadFields/properties/emails/maxItems'],
  ['MAX_PHONES', 'Numbers in `phones`, also after `phone` is merged in.', '/components/schemas/LeadFields/properties/phones/maxItems'],
  ['IDEMPOTENCY_KEY_MAX_LENGTH', 'Characters of an `Idempotency-Key` header.', '/components/parameters/IdempotencyKey/schema/maxLength'],
  ['SHORT_TEXT_MAX_LENGTH', 'Characters of a short text field (a name, a job title, a company name).', '/components/schemas/ShortText/maxLength'],
  ['CUSTOM_FIELD_KEY_MAX_LENGTH', 'Characters of a `custom_fields` key, as sent and as stored (a longer slug is cut).', '/components/schemas/CustomFieldsInput/propertyNames/maxLength'],
  ['LONG_TEXT_MAX_LENGTH', 'Characters of a long text field (a description).', '/components/schemas/LongText/maxLength'],
  ['REQUEST_BODY_MAX_BYTES', 'Bytes of a request body (`413 payload_too_large` beyond).', '/components/responses/PayloadTooLarge/x-max-request-body-bytes'],
];

function at(document, pointer) {
  const value = pointer.split('/').slice(1).reduce((node, key) => node?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], document);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`OpenAPI document: ${pointer} is ${JSON.stringify(value)}, not a positive integer`);
  return value;
}

/** The text of generated/limits.ts for the published document `publishedText`. */
export function limitsModule(publishedText) {
  const document = parse(publishedText);
  const constants = LIMITS.map(([name, meaning, pointer]) => `/** ${meaning} The document: \`${pointer}\`. */\nexport const ${name} = ${at(document, pointer)};\n`);
  return [
    '// Built from openapi/openapi.published.yaml by scripts/generate-types.mjs (npm run generate);',
    '// edit the document, not this file. Each limit names where the document states it.',
    '',
    constants.join('\n'),
  ].join('\n');
}

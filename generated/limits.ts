// Built from openapi/openapi.published.yaml by scripts/generate-types.mjs (npm run generate);
// edit the document, not this file. Each limit names where the document states it.

/** Leads in one `POST /leads/batch`. The document: `/components/schemas/BatchRequest/properties/leads/maxItems`. */
export const BATCH_MAX = 100;

/** Addresses in `emails`, also after `email` is merged in. The document: `/components/schemas/LeadFields/properties/emails/maxItems`. */
export const MAX_EMAILS = 10;

/** Numbers in `phones`, also after `phone` is merged in. The document: `/components/schemas/LeadFields/properties/phones/maxItems`. */
export const MAX_PHONES = 10;

/** Characters of an `Idempotency-Key` header. The document: `/components/parameters/IdempotencyKey/schema/maxLength`. */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** Characters of a short text field (a name, a job title, a company name). The document: `/components/schemas/ShortText/maxLength`. */
export const SHORT_TEXT_MAX_LENGTH = 255;

/** Characters of a `custom_fields` key, as sent and as stored (a longer slug is cut). The document: `/components/schemas/CustomFieldsInput/propertyNames/maxLength`. */
export const CUSTOM_FIELD_KEY_MAX_LENGTH = 100;

/** Characters of a long text field (a description). The document: `/components/schemas/LongText/maxLength`. */
export const LONG_TEXT_MAX_LENGTH = 10000;

/** Bytes of a request body (`413 payload_too_large` beyond). The document: `/components/responses/PayloadTooLarge/x-max-request-body-bytes`. */
export const REQUEST_BODY_MAX_BYTES = 1048576;

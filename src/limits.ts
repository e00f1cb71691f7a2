// The caps the code applies itself. Those the OpenAPI document states as numbers come from
// it (generated/limits.ts): the validator enforces them on the payload as sent; the code
// applies them again after `email`+`emails` and `phone`+`phones` are merged, to a
// `custom_fields` key once slugified, and to the body and the Idempotency-Key, which it reads
// before the validator runs.
export { BATCH_MAX, CUSTOM_FIELD_KEY_MAX_LENGTH, IDEMPOTENCY_KEY_MAX_LENGTH, MAX_EMAILS, MAX_PHONES, REQUEST_BODY_MAX_BYTES } from '../generated/limits.js';

// The phone rules the document states in words only (its "Deduplication" and "Field handling"
// sections): a number of fewer digits is discarded on input and skipped in matching...
export const MIN_PHONE_DIGITS = 7;
// ...and numbers are compared on their last digits, this many.
export const PHONE_MATCH_DIGITS = 10;

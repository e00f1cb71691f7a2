// The one rule for text PostgreSQL cannot store, as the OpenAPI document states it ("Text
// that cannot be stored"): NUL (U+0000) is removed, and a lone UTF-16 surrogate (a high one
// not followed by a low one, or a low one not preceded by a high one) becomes U+FFFD.
// PostgreSQL refuses NUL in text and jsonb, and refuses a surrogate escape in jsonb; the
// rule is applied where text enters (the request body, a value decoded from it, a reply or a
// page read from outside) and again to every jsonb parameter (src/db/sql.ts).

const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const UNSTORABLE_TEST = /\u0000|[\ud800-\udfff]/;

/** `text` as it is stored: without NUL, a lone surrogate replaced by U+FFFD. */
export function storableText(text: string): string {
  // Most text has neither; a pair of surrogates (an emoji) is checked by the full pattern.
  if (!UNSTORABLE_TEST.test(text)) return text;
  return text.replace(UNSTORABLE, (found) => (found === '\u0000' ? '' : '\ufffd'));
}

const isPlainObject = (value: object): value is Record<string, unknown> => {
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
};

/** Whether the rule could change anything in `value` (a surrogate pair answers yes: checking it is the copy's job). */
function mayHoldUnstorable(value: unknown): boolean {
  if (typeof value === 'string') return UNSTORABLE_TEST.test(value);
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(mayHoldUnstorable);
  return isPlainObject(value) && Object.entries(value).some(([key, item]) => UNSTORABLE_TEST.test(key) || mayHoldUnstorable(item));
}

function storableCopy(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(storableCopy);
  if (!isPlainObject(value)) return value;
  // fromEntries defines own properties: a key such as `__proto__` stays data.
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [storableText(key), storableCopy(item)]));
}

/**
 * `value` with the rule applied to every string in it, object keys included: the same value
 * when nothing needs it, else a copy. Keys that become equal keep the last value, as JSON
 * does for a key sent twice.
 */
export function storableValue<T>(value: T): T {
  return mayHoldUnstorable(value) ? (storableCopy(value) as T) : value;
}

// Maps express-openapi-validator (Ajv) errors onto the spec's 422 shape:
// `{ errors: { "company.id": ["..."], "leads.3.name": ["..."] } }`.

interface ValidatorError {
  path?: string;
  message?: string;
  errorCode?: string;
}

export type MappedValidation =
  /** An integer path parameter the schema rejects (`0`, beyond 2^53): it names no row. */
  | { kind: 'path' }
  /** Only the Idempotency-Key header broke its schema: `400 invalid_idempotency_key`, reported after the body validated. */
  | { kind: 'idempotencyKey' }
  | { kind: 'fields'; errors: Record<string, string[]> };

const CONTACT_FIELDS = new Set(['email', 'phone', 'linkedin_url', 'emails', 'phones']);
const CONTACT_RULE_MESSAGE = 'The email field is required when none of phone / linkedin_url are present.';
const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** How a property whose name is the empty string appears in an error key (`(empty)`, `company.(empty)`). */
const EMPTY_NAME_KEY = '(empty)';
const EMPTY_NAME_MESSAGE = 'A field with an empty name is not allowed.';

export function readableKey(name: string): string {
  return name === '' ? EMPTY_NAME_KEY : name;
}

/**
 * Error messages keyed by field. Keys come from the client (unknown property and query
 * parameter names such as `__proto__` or `constructor`), so they live in a Map and become
 * own properties of the JSON object, never lookups on an object prototype.
 */
export class FieldErrors {
  private readonly byField = new Map<string, string[]>();

  add(field: string, message: string): void {
    const messages = this.byField.get(field);
    if (!messages) this.byField.set(field, [message]);
    else if (!messages.includes(message)) messages.push(message);
  }

  isEmpty(): boolean {
    return this.byField.size === 0;
  }

  toObject(): Record<string, string[]> {
    return Object.fromEntries(this.byField);
  }
}

/** `/body/company/website` -> location `body`, field `company.website`; JSON-pointer escapes undone. */
function fieldKey(path: string): { location: string; field: string } {
  const [, location = '', ...rest] = path.split('/');
  return { location, field: rest.map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~')).join('.') };
}

function keywordOf(error: ValidatorError): string {
  return (error.errorCode ?? '').split('.')[0] ?? '';
}

function humanName(field: string): string {
  const last =
    field
      .split('.')
      .filter((part) => !/^\d+$/.test(part))
      .pop() ?? field;
  return last.replaceAll('_', ' ');
}

/** The message for one error; `ofKeys`: it is about the object's keys (see propertyNames below), not the field's value. */
function messageFor(field: string, error: ValidatorError, ofKeys: boolean): string {
  const name = humanName(field);
  const raw = error.message ?? 'is invalid';
  if (ofKeys && keywordOf(error) === 'maxLength') return `Each key of the ${name} field must not be greater than ${/(\d+)/.exec(raw)?.[1] ?? 'the allowed number of'} characters.`;
  switch (keywordOf(error)) {
    case 'required':
      return `The ${name} field is required.`;
    case 'format': {
      const format = /"([^"]+)"/.exec(raw)?.[1];
      if (format === 'email') return `The ${name} field must be a valid email address.`;
      if (format === 'uri') return `The ${name} field must be a valid URL.`;
      return `The ${name} field format is invalid.`;
    }
    case 'maxLength':
      return `The ${name} field must not be greater than ${/(\d+)/.exec(raw)?.[1] ?? 'the allowed number of'} characters.`;
    case 'minLength':
    case 'pattern':
      return `The ${name} field must not be blank.`;
    case 'maxItems':
      return `The ${name} field must not have more than ${/(\d+)/.exec(raw)?.[1] ?? 'the allowed number of'} items.`;
    case 'minItems':
      return `The ${name} field must have at least ${/(\d+)/.exec(raw)?.[1] ?? 'one'} item(s).`;
    case 'maxProperties':
      return `The ${name} field must not have more than ${/(\d+)/.exec(raw)?.[1] ?? 'the allowed number of'} keys.`;
    case 'enum':
      return `The selected ${name} is invalid.`;
    case 'type':
      return `The ${name} field must be ${/must be (\w+)/.exec(raw)?.[1] ?? 'of the documented type'}.`;
    case 'additionalProperties':
    case 'unevaluatedProperties':
      // The name as sent, not humanized: it is not one of ours.
      return `The ${field.split('.').pop()} field is not allowed.`;
    case 'minimum':
      return `The ${name} field must be at least ${/(\d+)/.exec(raw)?.[1] ?? 'the minimum'}.`;
    case 'maximum':
      return `The ${name} field must not be greater than ${/(\d+)/.exec(raw)?.[1] ?? 'the maximum'}.`;
    default:
      return `The ${name} field ${raw}.`;
  }
}

// The one input object whose keys are free (CustomFieldsInput): an empty key there is allowed.
const FREE_KEYED_OBJECTS = new Set(['custom_fields']);

/**
 * Where the body has a property named "" outside custom_fields: `(empty)`, `company.(empty)`,
 * `leads.0.(empty)`. The validator reports such a property with an empty path, losing its
 * parent; the body says where it is. Iterative, so a deeply nested body cannot overflow the stack.
 */
function emptyNameKeys(body: unknown): string[] {
  const keys: string[] = [];
  const pending: Array<{ value: unknown; path: string[] }> = [{ value: body, path: [] }];
  while (pending.length > 0) {
    const { value, path } = pending.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (!Array.isArray(value) && Object.hasOwn(value, '') && !FREE_KEYED_OBJECTS.has(path.at(-1) ?? '')) keys.push([...path, EMPTY_NAME_KEY].join('.'));
    for (const [key, child] of Object.entries(value)) pending.push({ value: child, path: [...path, readableKey(key)] });
  }
  return keys.sort();
}

export function validationErrorsFromValidator(rawErrors: unknown[], body: unknown): MappedValidation {
  const errors = rawErrors as ValidatorError[];
  const result = new FieldErrors();
  let idempotencyKeyInvalid = false;

  // An anyOf failure on a lead object is the contact rule: file it under `<lead>.email`
  // and drop the per-branch noise Ajv reports beside it.
  const contactFailures = new Set<string>();
  // A key breaking `propertyNames` (custom_fields keys) is reported at the object's path, as
  // the key's own error and a `propertyNames` one that says only that a key is invalid: the
  // first is answered as being about the keys, the second dropped.
  const keyFailures = new Set<string>();
  for (const error of errors) {
    if (keywordOf(error) === 'anyOf') contactFailures.add(fieldKey(error.path ?? '').field);
    if (keywordOf(error) === 'propertyNames') keyFailures.add(fieldKey(error.path ?? '').field);
  }

  for (const error of errors) {
    const { location, field } = fieldKey(error.path ?? '');
    if (location === 'params') return { kind: 'path' };
    if (location === 'headers' && field.toLowerCase() === IDEMPOTENCY_KEY_HEADER) {
      idempotencyKeyInvalid = true;
      continue;
    }
    const keyword = keywordOf(error);
    if (location === '' && (keyword === 'additionalProperties' || keyword === 'unevaluatedProperties')) {
      const keys = emptyNameKeys(body);
      for (const key of keys.length > 0 ? keys : [EMPTY_NAME_KEY]) result.add(key, EMPTY_NAME_MESSAGE);
      continue;
    }
    if (keyword === 'anyOf') {
      result.add(field ? `${field}.email` : 'email', CONTACT_RULE_MESSAGE);
      continue;
    }
    if (keyword === 'propertyNames') continue;
    const parent = field.split('.').slice(0, -1).join('.');
    const leaf = field.split('.').pop() ?? '';
    const isContactBranchNoise = (contactFailures.has(parent) && CONTACT_FIELDS.has(leaf) && keyword === 'required') || (contactFailures.has(field) && keyword === 'not');
    if (isContactBranchNoise) continue;
    const key = location === 'headers' ? field.toLowerCase() : field || location;
    result.add(key, messageFor(key, error, keyFailures.has(field)));
  }
  if (result.isEmpty() && idempotencyKeyInvalid) return { kind: 'idempotencyKey' };
  return { kind: 'fields', errors: result.toObject() };
}

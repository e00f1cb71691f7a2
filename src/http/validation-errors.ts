// Maps express-openapi-validator (Ajv) errors onto the spec's 422 shape:
// `{ errors: { "company.id": ["..."], "leads.3.name": ["..."] } }`.

interface ValidatorError {
  path?: string;
  message?: string;
  errorCode?: string;
}

export type MappedValidation = { kind: 'path' } | { kind: 'fields'; errors: Record<string, string[]> };

const CONTACT_FIELDS = new Set(['email', 'phone', 'linkedin_url', 'emails', 'phones']);
export const CONTACT_RULE_MESSAGE = 'The email field is required when none of phone / linkedin_url are present.';

function fieldKey(path: string): { location: string; field: string } {
  const [, location = '', ...rest] = path.split('/');
  return { location, field: rest.join('.') };
}

function keywordOf(error: ValidatorError): string {
  return (error.errorCode ?? '').split('.')[0] ?? '';
}

function humanName(field: string): string {
  const last = field.split('.').filter((part) => !/^\d+$/.test(part)).pop() ?? field;
  return last.replaceAll('_', ' ');
}

function messageFor(field: string, error: ValidatorError): string {
  const name = humanName(field);
  const raw = error.message ?? 'is invalid';
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
      return `The ${name} field is not allowed.`;
    case 'minimum':
      return `The ${name} field must be at least ${/(\d+)/.exec(raw)?.[1] ?? 'the minimum'}.`;
    case 'maximum':
      return `The ${name} field must not be greater than ${/(\d+)/.exec(raw)?.[1] ?? 'the maximum'}.`;
    default:
      return `The ${name} field ${raw.replace(/^must/, 'must')}.`;
  }
}

export function validationErrorsFromValidator(rawErrors: unknown[]): MappedValidation {
  const errors = rawErrors as ValidatorError[];
  const result: Record<string, string[]> = {};
  const add = (field: string, message: string) => {
    const list = (result[field] ??= []);
    if (!list.includes(message)) list.push(message);
  };

  // An anyOf failure on a lead object is the contact rule: file it under `<lead>.email`
  // and drop the per-branch noise Ajv reports beside it.
  const contactFailures = new Set<string>();
  for (const error of errors) {
    if (keywordOf(error) === 'anyOf') contactFailures.add(fieldKey(error.path ?? '').field);
  }

  for (const error of errors) {
    const { location, field: rawField } = fieldKey(error.path ?? '');
    if (location === 'params') return { kind: 'path' };
    let field = rawField;
    const keyword = keywordOf(error);
    if (keyword === 'additionalProperties') {
      const extra = /'([^']+)'/.exec(error.message ?? '')?.[1] ?? /property "?([^" ]+)"?/.exec(error.message ?? '')?.[1];
      if (extra && !field.endsWith(extra)) field = field ? `${field}.${extra}` : extra;
    }
    if (keyword === 'anyOf') {
      add(field ? `${field}.email` : 'email', CONTACT_RULE_MESSAGE);
      continue;
    }
    const parent = field.split('.').slice(0, -1).join('.');
    const leaf = field.split('.').pop() ?? '';
    const isContactBranchNoise = contactFailures.has(parent) && CONTACT_FIELDS.has(leaf) && (keyword === 'required' || keyword === 'minItems');
    if (isContactBranchNoise) continue;
    if (location === 'headers') field = field.toLowerCase();
    add(field || location, messageFor(field || location, error));
  }
  return { kind: 'fields', errors: result };
}

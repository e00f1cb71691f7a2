import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { contractDocument, follow } from '../support/contract-document.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { postLead, uniqueEmail } from '../support/requests.js';

// The limits of the lead fields as the published document states them, read from it rather
// than restated: every string it bounds (at its limit: taken; one past it: 422 naming the
// field), every array and object it caps (one past it: 422); then the cap the service
// applies again after merging phone into phones.

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

let sequence = 0;
const post = (body: object) => postLead(t, tenant, body);
const person = () => ({ name: 'Field Limits', email: uniqueEmail('limits'), enrich: false });

interface Schema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  maxLength?: number;
  maxItems?: number;
  maxProperties?: number;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  propertyNames?: Schema;
  items?: Schema;
}

/** A bounded string, a capped array or object, or the bounded keys of an object of the lead fields, by its path (array items at index 0). */
type Limit = { path: Array<string | number>; schema: Schema } & ({ maxLength: number } | { maxItems: number } | { maxProperties: number } | { keyMaxLength: number });

function limitsOf(schema: Schema, path: Array<string | number> = []): Limit[] {
  const resolved = follow(schema);
  const own: Limit[] = [];
  if (resolved.maxLength !== undefined) own.push({ path, schema: resolved, maxLength: resolved.maxLength });
  if (resolved.maxItems !== undefined) own.push({ path, schema: resolved, maxItems: resolved.maxItems });
  if (resolved.maxProperties !== undefined) own.push({ path, schema: resolved, maxProperties: resolved.maxProperties });
  const keys = resolved.propertyNames && follow(resolved.propertyNames);
  if (keys?.maxLength !== undefined) own.push({ path, schema: keys, keyMaxLength: keys.maxLength });
  const nested = [
    ...Object.entries(resolved.properties ?? {}).flatMap(([name, property]) => limitsOf(property, [...path, name])),
    ...(typeof resolved.additionalProperties === 'object' ? limitsOf(resolved.additionalProperties, [...path, 'any_key']) : []),
    ...(resolved.items ? limitsOf(resolved.items, [...path, 0]) : []),
  ];
  return [...own, ...nested];
}

const LIMITS = limitsOf(contractDocument.components.schemas!.LeadFields as Schema);

/** A valid value of `schema` exactly `length` characters long (unique per call: no two payloads match). */
function stringOfLength(schema: Schema, length: number): string {
  const tag = `u${++sequence}`;
  if (schema.format === 'email') return `${tag}${'a'.repeat(length - tag.length - '@gmail.com'.length)}@gmail.com`;
  if (schema.format === 'uri') return `https://example.test/${tag}${'a'.repeat(length - tag.length - 'https://example.test/'.length)}`;
  return `${sequence}${'5'.repeat(length - String(sequence).length)}`;
}

/** `count` distinct valid items of the array `schema`. */
function itemsOf(schema: Schema, count: number): unknown[] {
  const item = follow(schema.items!);
  return Array.from({ length: count }, (_, index) => {
    if (item.type === 'integer') return index + 1;
    if (item.format === 'email') return `item${index}.${++sequence}@gmail.com`;
    if (item.properties?.url) return { type: 'other', url: `https://example.test/${index}` };
    return `+1 415 555 ${String(1000 + index)}`;
  });
}

/** `body` with `value` at `path`, the objects on the way created (a link at index 0 gets a type). */
function withValue(body: Record<string, unknown>, path: Array<string | number>, value: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = structuredClone(body);
  let node: Record<string | number, unknown> = copy;
  path.forEach((segment, depth) => {
    if (depth === path.length - 1) {
      node[segment] = value;
      return;
    }
    const next = path[depth + 1];
    node[segment] ??= typeof next === 'number' ? [] : {};
    if (path[depth - 1] === 'links') Object.assign(node[segment] as object, { type: 'other' });
    node = node[segment] as Record<string | number, unknown>;
  });
  return copy;
}

describe('the limits the document sets on the lead fields', () => {
  it('reads a bound for every string field, not only name and description', () => {
    const bounded = LIMITS.filter((limit) => 'maxLength' in limit).map((limit) => limit.path.join('.'));
    expect(bounded).toEqual(
      expect.arrayContaining([
        'name',
        'email',
        'phone',
        'linkedin_url',
        'emails.0',
        'phones.0',
        'links.0.url',
        'job_title',
        'description',
        'gender',
        'language',
        'custom_fields.any_key',
        'location.country',
        'location.state',
        'location.city',
        'location.address',
        'location.zip_code',
        'tags.0',
        'company.name',
        'company.website',
        'company.linkedin_url',
        'company.industry',
        'company.size',
        'company.description',
        'company.emails.0',
        'company.phones.0',
        'company.location.country',
        'company.location.zip_code',
      ]),
    );
  });

  it.each(LIMITS.filter((limit): limit is Limit & { maxLength: number } => 'maxLength' in limit).map((limit) => [limit.path.join('.'), limit] as const))(
    'takes %s at its maximum length and refuses it one character longer, naming it',
    async (field, limit) => {
      const atMost = await post(withValue(person(), limit.path, stringOfLength(limit.schema, limit.maxLength)));
      expect({ field, taken: [200, 201].includes(atMost.status), errors: atMost.body.errors }).toEqual({ field, taken: true, errors: undefined });
      const over = await post(withValue(person(), limit.path, stringOfLength(limit.schema, limit.maxLength + 1)));
      expect({ field, status: over.status }).toEqual({ field, status: 422 });
      expect(Object.keys(over.body.errors)).toEqual([field]);
    },
  );

  it('bounds the keys of custom_fields, not only their number', () => {
    expect(LIMITS.filter((limit) => 'keyMaxLength' in limit).map((limit) => limit.path.join('.'))).toEqual(['custom_fields']);
  });

  it.each(LIMITS.filter((limit): limit is Limit & { keyMaxLength: number } => 'keyMaxLength' in limit).map((limit) => [limit.path.join('.'), limit] as const))(
    'takes a key of %s at its maximum length and refuses one a character longer, naming the object',
    async (field, limit) => {
      const key = (length: number) => `${++sequence}${'k'.repeat(length - String(sequence).length)}`;
      const atMost = key(limit.keyMaxLength);
      const taken = await post(withValue(person(), limit.path, { [atMost]: 'value' }));
      expect({ field, status: taken.status, stored: taken.body.data?.custom_fields }).toEqual({ field, status: 201, stored: { [atMost]: 'value' } });
      const over = await post(withValue(person(), limit.path, { [key(limit.keyMaxLength + 1)]: 'value' }));
      expect({ field, status: over.status, errors: over.body.errors }).toEqual({
        field,
        status: 422,
        errors: { [field]: [expect.stringContaining(`${limit.keyMaxLength} characters`)] },
      });
    },
  );

  it("cuts a slug longer than the keys' limit to it: a key of 100 rupee signs is stored as 100 characters of indian_rupee", async () => {
    const limit = LIMITS.find((each): each is Limit & { keyMaxLength: number } => 'keyMaxLength' in each)!;
    const response = await post(withValue(person(), limit.path, { ['₹'.repeat(limit.keyMaxLength)]: 'value' }));
    expect(response.status).toBe(201);
    expect(Object.keys(response.body.data.custom_fields)).toEqual(['indian_rupee'.repeat(limit.keyMaxLength).slice(0, limit.keyMaxLength)]);
  });

  /** One item (or key) past the cap of an array (or object). */
  const pastTheCap = (limit: Limit) =>
    'maxItems' in limit
      ? itemsOf(limit.schema, limit.maxItems + 1)
      : 'maxProperties' in limit
        ? Object.fromEntries(Array.from({ length: limit.maxProperties + 1 }, (_, index) => [`key_${index}`, 'value']))
        : null;

  it.each(LIMITS.filter((limit) => 'maxItems' in limit || 'maxProperties' in limit).map((limit) => [limit.path.join('.'), limit] as const))(
    'refuses %s one item (or key) over its cap, naming it',
    async (field, limit) => {
      const over = await post(withValue(person(), limit.path, pastTheCap(limit)));
      expect({ field, status: over.status }).toEqual({ field, status: 422 });
      expect(Object.keys(over.body.errors)).toEqual([field]);
    },
  );
});

describe('phone and phones', () => {
  const numbers = (count: number, from = 0) => Array.from({ length: count }, (_, index) => `+1 415 555 ${String(2000 + ++sequence * 20 + from + index).padStart(4, '0')}`);
  const digits = (phone: string) => phone.replace(/\D/g, '');

  it('caps the merged list at the phones cap: phone and a full phones list keep the first 10, with a warning', async () => {
    const [phone, ...phones] = numbers(11);
    const response = await post({ ...person(), phone, phones });
    expect(response.status).toBe(201);
    expect(response.body.data.phones).toEqual([phone!, ...phones.slice(0, 9)].map(digits));
    expect(response.body.meta.warnings).toEqual(['phones: only the first 10 values are kept; 1 dropped.']);
  });

  it('normalizes before capping: a repeat of phone in another format and a number too short take no place', async () => {
    const [phone, ...others] = numbers(9);
    const response = await post({ ...person(), phone, phones: [digits(phone!).replace(/^(\d)(\d{3})(\d{3})(\d{4})$/, '$1-$2-$3-$4'), '12-34', ...others] });
    expect(response.status).toBe(201);
    expect(response.body.data.phones).toEqual([phone!, ...others].map(digits));
    expect(response.body.meta.warnings).toEqual([]);
  });
});

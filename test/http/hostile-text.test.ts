import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { contractDocument, follow } from '../support/contract-document.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';

// Text PostgreSQL cannot store (NUL, lone UTF-16 surrogates), put in every string the two
// write bodies of the published document have (values, array items, object keys, nested
// ones), as sent and percent-encoded where the service decodes a value, through every write
// path: a new lead, an update of an existing one, a dry run, a call under an Idempotency-Key
// (sent twice: the stored answer replays) and a batch row. The strings come from walking the
// document's request schemas, so a string field added to the document adds its cases here.

const bed = testBed({ app: { env: { RATE_LIMIT_PER_MINUTE: '1000000' } } });
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

interface Schema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: string[];
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  propertyNames?: Schema;
}
type Path = Array<string | number>;
/** A string of a request body: a value, or the keys of an object that takes any key. */
interface Slot {
  path: Path;
  schema: Schema;
  kind: 'value' | 'key';
}

/** The key under which a value of an object taking any key is put. */
const ANY_KEY = 'field';

function stringSlots(schema: Schema, path: Path = []): Slot[] {
  const resolved = follow(schema);
  const types = resolved.type === undefined ? [] : [resolved.type].flat();
  const container = resolved.properties || resolved.items || resolved.additionalProperties || types.includes('object') || types.includes('array');
  const slots: Slot[] = types.includes('string') || (!container && types.length === 0) ? [{ path, schema: resolved, kind: 'value' }] : [];
  for (const [name, property] of Object.entries(resolved.properties ?? {})) slots.push(...stringSlots(property, [...path, name]));
  if (resolved.items) slots.push(...stringSlots(resolved.items, [...path, 0]));
  if (resolved.additionalProperties !== undefined && resolved.additionalProperties !== false) {
    slots.push({ path, schema: follow(resolved.propertyNames ?? {}), kind: 'key' });
    slots.push(...stringSlots(resolved.additionalProperties === true ? {} : resolved.additionalProperties, [...path, ANY_KEY]));
  }
  return slots;
}

const bodySchema = (route: string) =>
  (contractDocument.paths[route]!.post as unknown as { requestBody: { content: Record<string, { schema: Schema }> } }).requestBody.content['application/json']!.schema;

let sequence = 0;
/** A valid value of a string schema, unique per call. */
function validString(schema: Schema): string {
  const n = ++sequence;
  if (schema.enum) return schema.enum[0]!;
  if (schema.format === 'email') return `hostile${n}@gmail.com`;
  if (schema.format === 'uri') return `https://www.linkedin.com/in/hostile${n}`;
  return `text${n}`;
}

/** The smallest valid value of `schema` holding `leaf` at `path`, required properties filled in. */
function holding(schema: Schema, path: Path, leaf: unknown): unknown {
  const resolved = follow(schema);
  if (path.length === 0) return leaf;
  const [head, ...rest] = path;
  if (typeof head === 'number') return [holding(resolved.items!, rest, leaf)];
  const required = (resolved.required ?? [])
    .filter((name) => name !== head)
    .map((name) => [name, holding(resolved.properties![name]!, [], validString(follow(resolved.properties![name]!)))]);
  const property = resolved.properties?.[head!] ?? (typeof resolved.additionalProperties === 'object' ? resolved.additionalProperties : {});
  return Object.fromEntries([...required, [head, holding(property, rest, leaf)]]);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `over` laid on `base`: objects key by key, arrays item by item. */
function laidOn(base: unknown, over: unknown): unknown {
  if (isObject(base) && isObject(over)) {
    return Object.fromEntries([...new Set([...Object.keys(base), ...Object.keys(over)])].map((key) => [key, key in over ? laidOn(base[key], over[key]) : base[key]]));
  }
  if (Array.isArray(base) && Array.isArray(over))
    return Array.from({ length: Math.max(base.length, over.length) }, (_, index) => (index < over.length ? laidOn(base[index], over[index]) : base[index]));
  return over;
}

// What goes into a string: put into a valid value (before its last character, so into a
// LinkedIn handle or a URL's path) or sent alone. `%..` forms matter where a value is decoded.
const INSERTED = ['\u0000', '%00', '\ud800', '\udc00', '\udc00\ud800', '%ed%a0%80', '%c0%80'];
const ALONE = ['\u0000', '\ud800', '\udc00', ' \u0000 '];
const variants = (valid: string) => [...INSERTED.map((text) => `${valid.slice(0, -1)}${text}${valid.slice(-1)}`), ...ALONE];

/** What a slot carries in a body: the hostile text as the value, or as a key beside a plain value. */
const leafOf = (slot: Slot, text: string) => (slot.kind === 'key' ? Object.fromEntries([[text, 'value']]) : text);

/** `value` with every object's keys in order (jsonb stores keys in an order of its own). */
const sorted = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(sorted)
    : isObject(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((key) => [key, sorted(value[key])]),
        )
      : value;

const visible = (text: string) => JSON.stringify(text);
const label = (slot: Slot) => `${slot.path.join('.')}${slot.kind === 'key' ? ' (key)' : ''}`;

// JSON.stringify writes NUL and a lone surrogate as `\u` escapes, so the service receives them as a client's JSON would carry them.
const send = (route: string, body: unknown, headers: Record<string, string> = {}) =>
  t.http.post(route).set(tenant.auth).set(headers).set('Content-Type', 'application/json').send(JSON.stringify(body));

/** Runs `tasks` a few at a time (one server, a shared machine). */
async function inTurns(tasks: Array<() => Promise<void>>, width = 6): Promise<void> {
  const queue = [...tasks];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let task = queue.shift(); task; task = queue.shift()) await task();
    }),
  );
}

// A NUL escape or any surrogate escape: express writes a well-formed pair as UTF-8, so an escape is a lone one.
const UNSTORABLE_ESCAPE = /\\u0000|\\ud[89a-f][0-9a-f]{2}/i;

const SINGLE = '/api/v1/leads';
const BATCH = '/api/v1/leads/batch';
const singleSlots = stringSlots(bodySchema(SINGLE));
const batchSlots = stringSlots(bodySchema(BATCH));

describe('text PostgreSQL cannot store, in every string of the write bodies', () => {
  it('finds the strings of the document: nested ones, array items and object keys', () => {
    expect(singleSlots.map(label)).toEqual(
      expect.arrayContaining([
        'name',
        'email',
        'linkedin_url',
        'emails.0',
        'links.0.url',
        'custom_fields (key)',
        `custom_fields.${ANY_KEY}`,
        'location.city',
        'tags.0',
        'company.name',
        'company.website',
        'company.location.zip_code',
        'on_duplicate',
      ]),
    );
    expect(batchSlots.map(label)).toEqual(expect.arrayContaining(['leads.0.name', 'leads.0.custom_fields (key)', 'leads.0.company.phones.0']));
    expect(JSON.stringify({ text: '\u0000\ud800' })).toBe('{"text":"\\u0000\\ud800"}');
  });

  it('never answers 5xx on a new lead, an update, a dry run or under an Idempotency-Key, nor echoes such text', async () => {
    const existing = singleSlots.map(() => ({ email: `existing${++sequence}@gmail.com`, phone: `+1 415 ${String(1_000_000 + sequence).slice(-7)}` }));
    const made = await send(BATCH, { leads: existing.map((identity) => ({ name: 'Existing', ...identity })), enrich: false });
    expect(made.body.data.map((row: { status: string }) => row.status)).toEqual(existing.map(() => 'created'));

    const failures: string[] = [];
    const check = async (what: string, call: () => Promise<{ status: number; text: string; headers: Record<string, string> }>) => {
      try {
        const response = await call();
        if (response.status >= 500 || !/^application\/json/.test(response.headers['content-type'] ?? ''))
          failures.push(`${what} -> ${response.status} ${response.text.slice(0, 120)}`);
        else if (UNSTORABLE_ESCAPE.test(response.text)) failures.push(`${what} -> ${response.status} echoes it: ${response.text.slice(0, 120)}`);
        return response;
      } catch (error) {
        failures.push(`${what}: ${(error as Error).message.slice(0, 200)}`);
        return null;
      }
    };
    const schema = bodySchema(SINGLE);
    const tasks = singleSlots.flatMap((slot, index) =>
      variants(validString(slot.schema)).map((text) => async () => {
        const what = `${label(slot)}=${visible(text)}`;
        const body = (identity: object) => laidOn({ name: 'Hostile', ...identity, enrich: false }, holding(schema, slot.path, leafOf(slot, text)));
        const fresh = () => ({ email: `fresh${++sequence}@gmail.com` });
        await check(`new ${what}`, () => send(SINGLE, body(fresh())));
        await check(`update ${what}`, () => send(SINGLE, body(existing[index]!)));
        await check(`dry run ${what}`, () => send(SINGLE, laidOn(body(fresh()), { dry_run: true })));
        const idempotent = body(fresh());
        const key = `hostile-${++sequence}`;
        const first = await check(`idempotent ${what}`, () => send(SINGLE, idempotent, { 'Idempotency-Key': key }));
        if (first && first.status < 400) {
          const replay = await check(`replay ${what}`, () => send(SINGLE, idempotent, { 'Idempotency-Key': key }));
          const same = replay && replay.status === first.status && JSON.stringify(sorted(JSON.parse(replay.text))) === JSON.stringify(sorted(JSON.parse(first.text)));
          if (replay && (replay.headers['idempotency-replayed'] !== 'true' || !same)) failures.push(`replay ${what} -> ${replay.status}, not the stored answer`);
        }
      }),
    );
    await inTurns(tasks);
    expect(failures).toEqual([]);
  }, 240_000);

  it('answers a batch with such a row 200 or 422, never 5xx', async () => {
    const failures: string[] = [];
    const schema = bodySchema(BATCH);
    const tasks = batchSlots.flatMap((slot) =>
      variants(validString(slot.schema)).map((text) => async () => {
        const what = `${label(slot)}=${visible(text)}`;
        const base = {
          leads: [
            { name: 'Hostile', email: `row${++sequence}@gmail.com` },
            { name: 'Beside', email: `row${++sequence}@gmail.com` },
          ],
          enrich: false,
        };
        try {
          const response = await send(BATCH, laidOn(base, holding(schema, slot.path, leafOf(slot, text))));
          if (![200, 422].includes(response.status)) failures.push(`${what} -> ${response.status} ${response.text.slice(0, 120)}`);
          else if (UNSTORABLE_ESCAPE.test(response.text)) failures.push(`${what} -> ${response.status} echoes it: ${response.text.slice(0, 120)}`);
        } catch (error) {
          failures.push(`${what}: ${(error as Error).message.slice(0, 200)}`);
        }
      }),
    );
    await inTurns(tasks);
    expect(failures).toEqual([]);
  }, 120_000);
});

describe('the rule the document states for such text', () => {
  it('removes NUL and makes a lone surrogate U+FFFD, in values and keys, keeps a pair, and stores what it answers', async () => {
    const created = await send(SINGLE, {
      name: 'Ja\u0000ne 😀',
      email: `rule${++sequence}@gmail.com`,
      job_title: 'x\ud800y',
      location: { city: '\udc00Oslo' },
      custom_fields: { 'Sco\u0000re': '9\udc00', '\ud800': 'dropped' },
      enrich: false,
    });
    expect(created.status).toBe(201);
    const expected = { name: 'Jane 😀', job_title: 'x\ufffdy', location: expect.objectContaining({ city: '\ufffdOslo' }), custom_fields: { score: '9\ufffd' } };
    expect(created.body.data).toMatchObject(expected);
    expect(created.body.meta.warnings).toEqual(['custom_fields: the key "\ufffd" has no letters or digits and was dropped.']);
    expect((await t.http.get(`/api/v1/leads/${created.body.data.id}`).set(tenant.auth)).body.data).toMatchObject(expected);
  });

  it('validates what remains: a name of nothing but NUL is empty', async () => {
    const response = await send(SINGLE, { name: '\u0000', email: `rule${++sequence}@gmail.com` });
    expect([response.status, Object.keys(response.body.errors)]).toEqual([422, ['name']]);
  });

  it('applies again to a decoded LinkedIn handle: /in/a%00b is the handle ab', async () => {
    const handle = `rule${++sequence}`;
    const first = await send(SINGLE, { name: 'Encoded', linkedin_url: `https://www.linkedin.com/in/${handle.slice(0, 2)}%00${handle.slice(2)}`, enrich: false });
    expect(first.status).toBe(201);
    const second = await send(SINGLE, { name: 'Plain', linkedin_url: `https://www.linkedin.com/in/${handle}`, enrich: false });
    expect([second.status, second.body.data.id, second.body.meta.match_kind]).toEqual([200, first.body.data.id, 'linkedin']);
  });
});

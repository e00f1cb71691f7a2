// The compatibility rules of the contract: what changed between two published documents
// (openapi/released/<version>.yaml and the one built from openapi/openapi.yaml), and which
// changes break someone who relies on the earlier one. The users are integrators' clients,
// Prism mocks built from the document and webhook receivers; a receiver reads what this
// service sends, so a webhook's body is judged as a response is.
//
// Why written here rather than taken from npm: `openapi-diff` refuses OpenAPI 3.1 documents,
// `@pb33f/openapi-changes` downloads a binary at install (impossible here), the Go `oasdiff`
// is not an npm package, and Optic's CLI (`@useoptic/optic`) brings a git- and
// telemetry-bound toolchain of hundreds of packages for a gate that needs these rules only
// (README, "Changing the contract").
//
// A change is { kind, location, message }: kind `breaking` (the gate fails), `added` (a new
// capability, a minor release) or `changed` (compatible, listed: a deprecation, a loosened
// input, a removal after its sunset).

export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Input bounds: raising a `min*` or lowering a `max*` refuses requests that passed. */
const LOWER_BOUNDS = ['minLength', 'minItems', 'minimum', 'exclusiveMinimum', 'minProperties'];
const UPPER_BOUNDS = ['maxLength', 'maxItems', 'maximum', 'exclusiveMaximum', 'maxProperties'];
/** Input keywords whose appearance or change may refuse a value that passed. */
const RESTRICTIONS = ['pattern', 'format', 'const', 'multipleOf'];

const quote = (value) => JSON.stringify(value);
const field = (where) => where || 'the body';

/** The item a `$ref` names, followed until it is not one. */
function resolve(document, value) {
  let node = value;
  for (let hops = 0; node && typeof node.$ref === 'string'; hops += 1) {
    if (hops > 32) throw new Error(`$ref loop at ${value.$ref}`);
    node = node.$ref
      .replace(/^#\//, '')
      .split('/')
      .map((part) => decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~'))
      .reduce((parent, key) => parent?.[key], document);
    if (node === undefined) throw new Error(`unresolved $ref ${value.$ref}`);
  }
  return node;
}

/** A schema with what a `$ref` names and the keywords beside it (OpenAPI 3.1 applies both). */
function withSiblings(document, schema) {
  if (!schema?.$ref) return schema ?? {};
  const { $ref: _ref, ...siblings } = schema;
  return { ...withSiblings(document, resolve(document, { $ref: schema.$ref })), ...siblings };
}

/** Whether an item marked deprecated may go: its `x-sunset` date has come. */
function sunsetPassed(item, today) {
  return item?.deprecated === true && typeof item['x-sunset'] === 'string' && item['x-sunset'] <= today;
}

/** A removal: breaking unless the item was deprecated and its sunset has passed. */
function removal(report, item, today, location, what) {
  if (sunsetPassed(item, today)) return report('changed', location, `${what} removed after its sunset (${item['x-sunset']})`);
  if (item?.deprecated === true && item['x-sunset']) return report('breaking', location, `${what} removed before its sunset (${item['x-sunset']})`);
  return report('breaking', location, `${what} removed`);
}

function deprecation(report, before, after, location, what) {
  if (after?.deprecated === true && before?.deprecated !== true) report('changed', location, `${what} deprecated${after['x-sunset'] ? `, sunset ${after['x-sunset']}` : ''}`);
}

const typesOf = (schema) => (schema.type === undefined ? null : [schema.type].flat());
const valuesOf = (schema) => (Array.isArray(schema.enum) ? schema.enum : 'const' in schema ? [schema.const] : null);

/**
 * The changes of one schema. `direction` is `input` (a client sends it: stricter breaks) or
 * `output` (a client reads it: a removed field, or one made optional or nullable, breaks).
 */
function compareSchemas(context, beforeSchema, afterSchema, where, direction, enclosing = new Set()) {
  // A recursive schema is followed once: a pair of $refs already being compared above is skipped.
  const pair = beforeSchema?.$ref && afterSchema?.$ref ? `${beforeSchema.$ref}|${afterSchema.$ref}` : null;
  if (pair && enclosing.has(pair)) return;
  const seen = pair ? new Set([...enclosing, pair]) : enclosing;
  const { report } = context;
  const before = withSiblings(context.before, beforeSchema);
  const after = withSiblings(context.after, afterSchema);
  const input = direction === 'input';
  const name = field(where);

  const [typesBefore, typesAfter] = [typesOf(before), typesOf(after)];
  if (typesBefore && typesAfter) {
    const dropped = typesBefore.filter((type) => !typesAfter.includes(type));
    const gained = typesAfter.filter((type) => !typesBefore.includes(type));
    const say = (types) => types.map((type) => (type === 'null' ? 'null' : `type ${type}`)).join(', ');
    if (input && dropped.length > 0) report('breaking', where, `${name} no longer accepts ${say(dropped)}`);
    if (input && gained.length > 0) report('changed', where, `${name} now also accepts ${say(gained)}`);
    if (!input && gained.includes('null')) report('breaking', where, `${name} made nullable`);
    if (!input && gained.some((type) => type !== 'null')) report('breaking', where, `${name} may now be ${say(gained.filter((type) => type !== 'null'))}`);
  } else if (input && typesAfter) {
    report('breaking', where, `${name} now restricted to ${typesAfter.join(', ')}`);
  }

  const [valuesBefore, valuesAfter] = [valuesOf(before), valuesOf(after)];
  if (valuesAfter) {
    const removed = valuesBefore ? valuesBefore.filter((value) => !valuesAfter.includes(value)) : null;
    const added = valuesBefore ? valuesAfter.filter((value) => !valuesBefore.includes(value)) : [];
    if (input && removed === null) report('breaking', where, `${name} now restricted to ${valuesAfter.map(quote).join(', ')}`);
    for (const value of input ? (removed ?? []) : []) report('breaking', where, `${name}: value ${quote(value)} removed (no longer accepted)`);
    for (const value of added) report(input ? 'added' : 'changed', where, input ? `${name}: value ${quote(value)} accepted` : `${name} may now be ${quote(value)}`);
  }

  if (input) {
    for (const bound of LOWER_BOUNDS) {
      if (after[bound] !== undefined && !(before[bound] !== undefined && after[bound] <= before[bound])) report('breaking', where, `${name}: ${bound} ${before[bound] ?? 'none'} -> ${after[bound]}`);
    }
    for (const bound of UPPER_BOUNDS) {
      if (after[bound] !== undefined && !(before[bound] !== undefined && after[bound] >= before[bound])) report('breaking', where, `${name}: ${bound} ${before[bound] ?? 'none'} -> ${after[bound]}`);
    }
    for (const keyword of RESTRICTIONS) {
      if (after[keyword] !== undefined && quote(after[keyword]) !== quote(before[keyword])) report('breaking', where, `${name}: ${keyword} ${before[keyword] === undefined ? 'added' : 'changed'} (${quote(after[keyword])})`);
    }
  }

  compareProperties(context, before, after, where, direction, seen);
  if (before.items && after.items) compareSchemas(context, before.items, after.items, `${where}[]`, direction, seen);
  if (before.additionalProperties && typeof before.additionalProperties === 'object' && typeof after.additionalProperties === 'object') {
    compareSchemas(context, before.additionalProperties, after.additionalProperties, `${where}{}`, direction, seen);
  }
  for (const combiner of ['oneOf', 'anyOf', 'allOf']) {
    const [branchesBefore, branchesAfter] = [before[combiner] ?? [], after[combiner] ?? []];
    for (let n = 0; n < Math.min(branchesBefore.length, branchesAfter.length); n += 1) compareSchemas(context, branchesBefore[n], branchesAfter[n], where, direction, seen);
    const alternatives = combiner !== 'allOf';
    if (branchesAfter.length < branchesBefore.length && alternatives && input) report('breaking', where, `${name}: ${combiner} lost ${branchesBefore.length - branchesAfter.length} accepted alternative(s)`);
    if (branchesAfter.length > branchesBefore.length && (alternatives ? !input : input)) report('breaking', where, `${name}: ${combiner} gained ${branchesAfter.length - branchesBefore.length} branch(es)`);
  }
  deprecation(report, before, after, where, name);
}

function compareProperties(context, before, after, where, direction, seen) {
  const { report, today } = context;
  const input = direction === 'input';
  const propertiesBefore = before.properties ?? {};
  const propertiesAfter = after.properties ?? {};
  const requiredBefore = new Set(before.required ?? []);
  const requiredAfter = new Set(after.required ?? []);
  const at = (property) => (where ? `${where}.${property}` : property);
  for (const [property, schema] of Object.entries(propertiesBefore)) {
    const location = at(property);
    if (!(property in propertiesAfter)) {
      // A request property may go without breaking anyone only when unknown fields are still accepted.
      if (input && after.additionalProperties !== false) report('changed', location, `input field ${location} removed (now ignored)`);
      else removal(report, withSiblings(context.before, schema), today, location, `${input ? 'input field' : 'field'} ${location}`);
      continue;
    }
    compareSchemas(context, schema, propertiesAfter[property], location, direction, seen);
    if (input && !requiredBefore.has(property) && requiredAfter.has(property)) report('breaking', location, `input field ${location} made required`);
    if (!input && requiredBefore.has(property) && !requiredAfter.has(property)) report('breaking', location, `field ${location} made optional`);
  }
  for (const property of Object.keys(propertiesAfter)) {
    if (property in propertiesBefore) continue;
    const location = at(property);
    if (input && requiredAfter.has(property)) report('breaking', location, `required input field ${location} added`);
    else report('added', location, `${input ? 'optional input field' : 'field'} ${location} added`);
  }
  if (input && before.additionalProperties !== false && after.additionalProperties === false && Object.keys(propertiesBefore).length + Object.keys(propertiesAfter).length > 0) {
    report('breaking', where, `${field(where)} no longer accepts unknown fields`);
  }
}

function parametersOf(document, pathItem, operation) {
  const parameters = [...(pathItem.parameters ?? []), ...(operation.parameters ?? [])].map((parameter) => resolve(document, parameter));
  return new Map(parameters.map((parameter) => [`${parameter.in} parameter ${parameter.name}`, parameter]));
}

const contentOf = (document, holder) => Object.entries(resolve(document, holder)?.content ?? {});

/**
 * The changes of one operation. A webhook (`sent`) is the other way round: this service
 * sends its parameters and body, which the receiver reads as a client reads a response.
 */
function compareOperations(context, label, items, operations, sent) {
  const { before: documentBefore, after: documentAfter, report, today } = context;
  // Locations name the operation and its part; each message names the field or value.
  const scoped = (prefix) => (kind, _where, message) => report(kind, prefix ? `${label} ${prefix}` : label, message);
  deprecation(scoped(''), operations.before, operations.after, '', 'operation');

  const [parametersBefore, parametersAfter] = [parametersOf(documentBefore, items.before, operations.before), parametersOf(documentAfter, items.after, operations.after)];
  for (const [key, parameter] of parametersBefore) {
    const after = parametersAfter.get(key);
    const at = scoped(key);
    if (!after) {
      // An unknown query parameter is refused (422), an unknown header ignored.
      if (!sent && parameter.in === 'header') at('changed', '', `${key} removed (now ignored)`);
      else removal(at, parameter, today, '', key);
      continue;
    }
    if (!sent && !parameter.required && after.required) at('breaking', '', `${key} made required`);
    if (sent && parameter.required && !after.required) at('breaking', '', `${key} made optional`);
    deprecation(at, parameter, after, '', key);
    compareSchemas({ ...context, report: at }, parameter.schema, after.schema, '', sent ? 'output' : 'input');
  }
  for (const [key, parameter] of parametersAfter) {
    if (parametersBefore.has(key)) continue;
    scoped(key)(!sent && parameter.required ? 'breaking' : 'added', '', `${parameter.required ? 'required' : 'optional'} ${key} added`);
  }

  const bodyDirection = sent ? 'output' : 'input';
  const [bodyBefore, bodyAfter] = [operations.before.requestBody, operations.after.requestBody];
  const body = scoped(sent ? 'body' : 'request body');
  if (bodyBefore && !bodyAfter) body('breaking', '', 'request body removed');
  if (!bodyBefore && bodyAfter && !sent && resolve(documentAfter, bodyAfter).required) body('breaking', '', 'required request body added');
  if (bodyBefore && bodyAfter) {
    const mediaAfter = new Map(contentOf(documentAfter, bodyAfter));
    for (const [media, content] of contentOf(documentBefore, bodyBefore)) {
      if (!mediaAfter.has(media)) body('breaking', '', `${media} ${sent ? 'no longer sent' : 'no longer accepted'}`);
      else compareSchemas({ ...context, report: body }, content.schema, mediaAfter.get(media).schema, '', bodyDirection);
    }
  }
  if (sent) return;

  const responsesAfter = operations.after.responses ?? {};
  for (const [status, responseBefore] of Object.entries(operations.before.responses ?? {})) {
    const answer = scoped(`response ${status}`);
    if (!(status in responsesAfter)) {
      answer('breaking', '', `response ${status} removed`);
      continue;
    }
    const [before, after] = [resolve(documentBefore, responseBefore), resolve(documentAfter, responsesAfter[status])];
    for (const header of Object.keys(before.headers ?? {})) if (!(header in (after.headers ?? {}))) answer('breaking', header, `header ${header} removed`);
    const mediaAfter = new Map(contentOf(documentAfter, after));
    for (const [media, content] of contentOf(documentBefore, before)) {
      if (!mediaAfter.has(media)) answer('breaking', '', `${media} body removed`);
      else compareSchemas({ ...context, report: answer }, content.schema, mediaAfter.get(media).schema, '', 'output');
    }
  }
  for (const status of Object.keys(responsesAfter)) if (!(status in (operations.before.responses ?? {}))) scoped(`response ${status}`)('added', '', `response ${status} added`);
}

function compareItems(context, section, sent) {
  const { before, after, report, today } = context;
  const [itemsBefore, itemsAfter] = [before[section] ?? {}, after[section] ?? {}];
  const label = (key, method) => `${sent ? 'webhook ' : ''}${method.toUpperCase()} ${key}`;
  for (const [key, itemBefore] of Object.entries(itemsBefore)) {
    const itemAfter = itemsAfter[key] ?? {};
    for (const method of METHODS.filter((candidate) => itemBefore[candidate])) {
      if (!itemAfter[method]) removal(report, itemBefore[method], today, label(key, method), sent ? 'webhook' : 'operation');
      else compareOperations(context, label(key, method), { before: itemBefore, after: itemAfter }, { before: itemBefore[method], after: itemAfter[method] }, sent);
    }
    for (const method of METHODS.filter((candidate) => itemAfter[candidate] && !itemBefore[candidate])) report('added', label(key, method), `${sent ? 'webhook' : 'operation'} added`);
  }
  for (const [key, itemAfter] of Object.entries(itemsAfter)) {
    if (key in itemsBefore) continue;
    for (const method of METHODS.filter((candidate) => itemAfter[candidate])) report('added', label(key, method), `${sent ? 'webhook' : 'operation'} added`);
  }
}

/**
 * Every change from the document `before` to `after` (both parsed published documents), in
 * document order, each once. `today` (YYYY-MM-DD) decides whether a sunset has passed.
 */
export function compareDocuments(before, after, { today }) {
  const changes = [];
  const reported = new Set();
  const report = (kind, location, message) => {
    const key = `${kind}|${location}|${message}`;
    if (reported.has(key)) return;
    reported.add(key);
    changes.push({ kind, location, message });
  };
  const context = { before, after, report, today };
  compareItems(context, 'paths', false);
  compareItems(context, 'webhooks', true);
  return changes;
}

/** The path versions (`/api/v1` → 1) a document serves. */
export function pathVersions(document) {
  return [...new Set(Object.keys(document.paths ?? {}).flatMap((path) => /^\/api\/v(\d+)\//.exec(path)?.[1] ?? []))].map(Number).sort((a, b) => a - b);
}

// Deprecation on the wire, declared in the published document: every response of an operation
// marked `deprecated: true` in openapi/openapi.yaml carries
//   Deprecation: @<epoch seconds of x-deprecated-since>   (RFC 9745)
//   Sunset: <HTTP-date of x-sunset>                        (RFC 8594)
//   Link: </docs#operation/<operationId>>; rel="deprecation"
// The values are written into the published document as the headers' examples, so the Prism
// mock returns them, and the service sends the same values read from there
// (src/http/deprecation.ts): this file is the one place that spells them.
import { METHODS } from './openapi-compat.mjs';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** The three headers of a deprecated operation, from its `x-deprecated-since` and `x-sunset` dates. */
export function deprecationHeaderValues(operation, where) {
  for (const key of ['x-deprecated-since', 'x-sunset']) {
    if (typeof operation[key] !== 'string' || !DATE.test(operation[key])) {
      throw new Error(`${where} is deprecated: it needs ${key}: YYYY-MM-DD (quoted), found ${JSON.stringify(operation[key])}`);
    }
  }
  if (operation['x-sunset'] <= operation['x-deprecated-since']) throw new Error(`${where}: x-sunset must come after x-deprecated-since`);
  return {
    Deprecation: `@${Date.parse(`${operation['x-deprecated-since']}T00:00:00Z`) / 1000}`,
    Sunset: new Date(`${operation['x-sunset']}T00:00:00Z`).toUTCString(),
    Link: `</docs#operation/${operation.operationId}>; rel="deprecation"`,
  };
}

const DESCRIPTIONS = {
  Deprecation: (operation) => `RFC 9745: this operation is deprecated since ${operation['x-deprecated-since']}.`,
  Sunset: (operation) => `RFC 8594: this operation may stop answering after ${operation['x-sunset']}.`,
  Link: () => 'The reference page of this operation, which says what replaces it.',
};

/**
 * Adds the headers to every response of each deprecated operation of a yaml Document (a
 * response given by `$ref` is copied inline first: the shared one stays without them).
 */
export function declareDeprecationHeaders(document) {
  const json = document.toJSON();
  for (const [path, item] of Object.entries(json.paths ?? {})) {
    for (const method of METHODS.filter((candidate) => item[candidate]?.deprecated === true)) {
      const operation = item[method];
      const values = deprecationHeaderValues(operation, `${method.toUpperCase()} ${path}`);
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const inline = response.$ref ? structuredClone(document.getIn(response.$ref.replace(/^#\//, '').split('/')).toJSON()) : response;
        const headers = Object.fromEntries(
          Object.entries(values).map(([name, value]) => [name, { description: DESCRIPTIONS[name](operation), required: true, schema: { type: 'string' }, example: value }]),
        );
        inline.headers = { ...headers, ...inline.headers };
        document.setIn(['paths', path, method, 'responses', status], document.createNode(inline, { aliasDuplicateObjects: false }));
      }
    }
  }
}

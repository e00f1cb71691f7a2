// Reads an OpenAPI document (YAML) on stdin, builds Redoc's model of it and renders it to HTML
// as the reference page at /docs would, and prints JSON: the side menu (with what Redoc made
// of each operation) and the rendered HTML. Used by test/http/docs-webhooks.test.ts in a process of
// its own: Redoc and the React stack it renders with set globals and leave scheduled work
// behind, which broke the test files Jest ran after it in the same worker.
import { createRequire } from 'node:module';
import { text } from 'node:stream/consumers';

const require = createRequire(import.meta.url);
const { createStore, Redoc } = require('redoc');
const React = require('react');
const { renderToString } = require('react-dom/server');
const { ServerStyleSheet } = require('styled-components');
const { parse } = require('yaml');

const document = parse(await text(process.stdin));
const store = await createStore(document, '/openapi.yaml', {});

const describe = (item) => ({
  type: item.type,
  id: item.id,
  name: item.name,
  isWebhook: item.isWebhook ?? false,
  httpVerb: item.httpVerb ?? null,
  parameters: (item.parameters ?? []).map((parameter) => `${parameter.in} ${parameter.name}`),
  mediaTypes: item.requestBody?.content?.mediaTypes.map((media) => media.name) ?? null,
  security: (item.security ?? []).map((requirement) => requirement.schemes.map((scheme) => scheme.id)),
  items: (item.items ?? []).map(describe),
});

const sheet = new ServerStyleSheet();
const html = renderToString(sheet.collectStyles(React.createElement(Redoc, { store })));
sheet.seal();
// Exit once the output is written: what Redoc left scheduled must not keep the process up.
process.stdout.write(JSON.stringify({ menu: store.menu.items.map(describe), html }), () => process.exit(0));

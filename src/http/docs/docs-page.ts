import type { RequestHandler } from 'express';

// Redoc's standalone bundle is served from the npm package: the page loads nothing from a CDN.
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Lead Intake API reference</title>
    <style>body { margin: 0; }</style>
  </head>
  <body>
    <redoc spec-url="/openapi.yaml" hide-download-button="false"></redoc>
    <script src="/docs/redoc.standalone.js"></script>
  </body>
</html>
`;

export const docsPage: RequestHandler = (_req, res) => {
  res.type('html').send(PAGE);
};

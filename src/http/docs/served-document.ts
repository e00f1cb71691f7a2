import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { PUBLISHED_OPENAPI_PATH } from '../../paths.js';

/**
 * The OpenAPI document as served at /openapi.yaml (and rendered at /docs): the committed
 * published file (openapi/openapi.published.yaml) with its `servers` entry pointing at this
 * deployment's PUBLIC_URL. Comments and layout are kept; built once at start.
 */
export function documentForClients(publicUrl: string): string {
  const document = parseDocument(readFileSync(PUBLISHED_OPENAPI_PATH, 'utf8'));
  document.set('servers', [{ url: publicUrl, description: 'This deployment (PUBLIC_URL)' }]);
  return document.toString({ lineWidth: 0, flowCollectionPadding: false });
}

import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { parseDocument } from 'yaml';
import { PROJECT_ROOT } from '../../src/paths.js';

// The promise of a contract-first service, tested on a scratch copy of the repository: an
// optional property added to the lead input or to the company input, then `npm run
// generate`, makes the typecheck (part of `npm test`) fail at the code that must handle it,
// naming the property.
const run = promisify(execFile);

type Change = (document: ReturnType<typeof parseDocument>) => void;

async function typecheckAfter(change: Change): Promise<{ failed: boolean; output: string }> {
  const copy = mkdtempSync(path.join(os.tmpdir(), 'contract-change-'));
  try {
    for (const entry of ['openapi', 'generated', 'src', 'scripts', 'tsconfig.json', 'tsconfig.build.json', 'package.json']) {
      cpSync(path.join(PROJECT_ROOT, entry), path.join(copy, entry), { recursive: true });
    }
    symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
    const documentPath = path.join(copy, 'openapi', 'openapi.yaml');
    const document = parseDocument(readFileSync(documentPath, 'utf8'));
    change(document);
    writeFileSync(documentPath, document.toString({ lineWidth: 0 }));

    await run(process.execPath, ['scripts/generate-types.mjs'], { cwd: copy });
    try {
      await run(process.execPath, [path.join('node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', 'tsconfig.json'], { cwd: copy });
      return { failed: false, output: '' };
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      return { failed: true, output: `${stdout}${stderr}` };
    }
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

describe('a contract change cannot pass unhandled', () => {
  it('an optional property added to LeadFields or CompanyInput fails the typecheck in src/leads/intake/prepare.ts, naming it', async () => {
    const addProperty =
      (schema: string, property: string): Change =>
      (document) => {
        document.setIn(['components', 'schemas', schema, 'properties', property], { type: 'string', maxLength: 255 });
      };
    const [lead, company] = await Promise.all([typecheckAfter(addProperty('LeadFields', 'favourite_colour')), typecheckAfter(addProperty('CompanyInput', 'stock_ticker'))]);
    expect(lead.failed).toBe(true);
    expect(lead.output).toMatch(/src\/leads\/intake\/prepare\.ts\(\d+,\d+\): error TS\d+: .*'favourite_colour'/s);
    expect(company.failed).toBe(true);
    expect(company.output).toMatch(/src\/leads\/intake\/prepare\.ts\(\d+,\d+\): error TS\d+: .*'stock_ticker'/s);
  }, 240_000);

  it('an operation added to the document fails the typecheck at the handler table, naming its operationId', async () => {
    const operation = await typecheckAfter((document) => {
      document.setIn(['paths', '/api/v1/ping'], {
        get: { operationId: 'ping', responses: { 200: { description: 'pong' }, 401: { $ref: '#/components/responses/Unauthorized' } } },
      });
    });
    expect(operation.failed).toBe(true);
    expect(operation.output).toMatch(/src\/http\/app\.ts\(\d+,\d+\): error TS\d+: .*'ping'/s);
  }, 240_000);
});

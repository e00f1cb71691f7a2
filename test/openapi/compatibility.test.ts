import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it, jest } from '@jest/globals';
import { parse, parseDocument } from 'yaml';
import { PROJECT_ROOT } from '../../src/paths.js';
import { contractCopy, deprecate, type DocumentEdit } from '../support/contract-copy.js';

// The compatibility gate (`npm run check:compat`, part of `npm test`) and the release command
// (`npm run release`), as a developer meets them after editing openapi/openapi.yaml: each
// change is listed with where it is, and one that would break an existing client, mock user or
// webhook receiver fails the gate, naming the field or value.
const run = promisify(execFile);
// Every check is a process of its own (the release's runs openapi-typescript twice): seconds
// each, but minutes on a loaded 2-core machine.
jest.setTimeout(300_000);
const SCHEMAS = ['components', 'schemas'];
/** The last release (the source's info.version) and the minor release after it. */
const RELEASED: string = parse(readFileSync(path.join(PROJECT_ROOT, 'openapi', 'openapi.yaml'), 'utf8')).info.version;
const [MAJOR, MINOR] = RELEASED.split('.').map(Number);
const NEXT_MINOR = `${MAJOR}.${MINOR! + 1}.0`;

async function node(script: string, args: string[], cwd = PROJECT_ROOT): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join('scripts', script), ...args], { cwd });
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (error) {
    const { code, stdout = '', stderr = '' } = error as { code: number; stdout?: string; stderr?: string };
    return { code, output: `${stdout}${stderr}` };
  }
}

/** check:compat on openapi/openapi.yaml edited by `edit`, against the releases in `released` (default: the repository's). */
async function gate(edit: DocumentEdit, options: { released?: string; today?: string } = {}) {
  const copy = contractCopy(edit);
  try {
    const args = ['--source', copy.source, ...(options.released ? ['--released', options.released] : []), ...(options.today ? ['--today', options.today] : [])];
    return await node('check-compat.mjs', args);
  } finally {
    copy.remove();
  }
}

describe('npm run check:compat', () => {
  it('passes on the document as it is: nothing in it breaks the last release', async () => {
    const { code, output } = await node('check-compat.mjs', []);
    // Compatible edits not released yet (an added optional field) are listed, and pass.
    expect(output).toMatch(/openapi\/openapi\.yaml against openapi\/released\/\d+\.\d+\.\d+\.yaml: /);
    expect(output).not.toContain('BREAKING');
    expect(code).toBe(0);
  });

  // Each change on its own copy, all at once (each run is a process of its own).
  const BREAKING: Array<[string, DocumentEdit, RegExp[]]> = [
    [
      'a lead output field removed',
      (document) => document.deleteIn([...SCHEMAS, 'Lead', 'properties', 'job_title']),
      [/BREAKING GET \/api\/v1\/leads\/\{id\} response 200: field data\.job_title removed/],
    ],
    [
      'an on_duplicate value removed',
      (document) => document.setIn([...SCHEMAS, 'OnDuplicate', 'enum'], ['update', 'error']),
      [/BREAKING POST \/api\/v1\/leads request body: on_duplicate: value "skip" removed/, /BREAKING POST \/api\/v1\/leads\/batch request body: on_duplicate: value "skip" removed/],
    ],
    [
      'an optional input made required',
      (document) => document.setIn([...SCHEMAS, 'LeadFields', 'required'], ['name', 'job_title']),
      [
        /BREAKING POST \/api\/v1\/leads request body: input field job_title made required/,
        /BREAKING POST \/api\/v1\/leads\/batch request body: input field leads\[\]\.job_title made required/,
      ],
    ],
    [
      'a property removed from a webhook body',
      (document) => document.deleteIn([...SCHEMAS, 'LeadPushEnvelope', 'properties', 'sent_at']),
      [/BREAKING webhook POST lead body: field sent_at removed/],
    ],
    [
      'an input made shorter',
      (document) => document.setIn([...SCHEMAS, 'LeadFields', 'properties', 'job_title', 'maxLength'], 100),
      [/BREAKING POST \/api\/v1\/leads request body: job_title: maxLength 255 -> 100/],
    ],
    [
      'a response field made nullable',
      (document) => document.setIn([...SCHEMAS, 'Lead', 'properties', 'name', 'type'], ['string', 'null']),
      [/BREAKING GET \/api\/v1\/leads\/\{id\} response 200: data\.name made nullable/],
    ],
    ['an operation removed', (document) => document.deleteIn(['paths', '/api/v1/tags']), [/BREAKING GET \/api\/v1\/tags: operation removed/]],
  ];
  const results = new Map<string, { code: number; output: string }>();
  beforeAll(async () => {
    await Promise.all(BREAKING.map(async ([change, edit]) => results.set(change, await gate(edit))));
  }, 300_000);

  it.each(BREAKING)('fails on %s, naming it', (change, _edit, expected) => {
    const { code, output } = results.get(change)!;
    for (const line of expected) expect(output).toMatch(line);
    expect(output).toContain('check:compat: FAILED');
    expect(code).toBe(1);
  });

  it('passes on an optional input field added, and lists it', async () => {
    const { code, output } = await gate((document) => document.setIn([...SCHEMAS, 'LeadFields', 'properties', 'nickname'], { type: 'string', maxLength: 100 }));
    expect(output).toMatch(/added {4}POST \/api\/v1\/leads request body: optional input field nickname added/);
    expect(output).toMatch(/added {4}POST \/api\/v1\/leads\/batch request body: optional input field leads\[\]\.nickname added/);
    expect(code).toBe(0);
  });

  it('refuses to remove a deprecated operation before its sunset, and lets it go after', async () => {
    const released = mkdtempSync(path.join(os.tmpdir(), 'released-'));
    const deprecated = contractCopy(deprecate(['paths', '/api/v1/tags', 'get'], '2026-12-01', '2027-06-30'));
    try {
      copyFileSync(deprecated.published, path.join(released, '1.0.0.yaml'));
      const removed: DocumentEdit = (document) => document.deleteIn(['paths', '/api/v1/tags']);
      const before = await gate(removed, { released, today: '2027-06-29' });
      expect(before.output).toMatch(/BREAKING GET \/api\/v1\/tags: operation removed before its sunset \(2027-06-30\)/);
      expect(before.code).toBe(1);
      const after = await gate(removed, { released, today: '2027-06-30' });
      expect(after.output).toMatch(/changed {2}GET \/api\/v1\/tags: operation removed after its sunset \(2027-06-30\)/);
      expect(after.code).toBe(0);
    } finally {
      deprecated.remove();
      rmSync(released, { recursive: true, force: true });
    }
  });

  it('fails when info.version is edited by hand (only npm run release sets it)', async () => {
    const { code, output } = await gate((document) => document.setIn(['info', 'version'], '1.0.1'));
    expect(output).toContain(`info.version is 1.0.1, the last release ${RELEASED}`);
    expect(code).toBe(1);
  });
});

describe('npm run release', () => {
  it('releases an added optional input as the next minor version with its changelog line, and refuses a breaking change', async () => {
    const copy = mkdtempSync(path.join(os.tmpdir(), 'release-'));
    try {
      for (const entry of ['openapi', 'generated', 'scripts', 'package.json']) cpSync(path.join(PROJECT_ROOT, entry), path.join(copy, entry), { recursive: true });
      symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
      const source = path.join(copy, 'openapi', 'openapi.yaml');
      const edit = (change: DocumentEdit) => {
        const document = parseDocument(readFileSync(source, 'utf8'));
        change(document);
        writeFileSync(source, document.toString({ lineWidth: 0 }));
      };

      edit((document) => document.setIn([...SCHEMAS, 'LeadFields', 'properties', 'nickname'], { type: 'string', maxLength: 100 }));
      const released = await node('release.mjs', ['--today', '2026-12-01'], copy);
      expect(released.output).toContain(`release: ${NEXT_MINOR} (was ${RELEASED})`);
      expect(released.code).toBe(0);
      expect(parse(readFileSync(source, 'utf8')).info.version).toBe(NEXT_MINOR);
      expect(parse(readFileSync(path.join(copy, 'openapi', 'released', `${NEXT_MINOR}.yaml`), 'utf8')).info.version).toBe(NEXT_MINOR);
      expect(readFileSync(path.join(copy, 'openapi', 'released', `${NEXT_MINOR}.yaml`), 'utf8')).toBe(readFileSync(path.join(copy, 'openapi', 'openapi.published.yaml'), 'utf8'));
      const changelog = readFileSync(path.join(copy, 'openapi', 'CHANGELOG.md'), 'utf8');
      expect(changelog).toContain(`## ${NEXT_MINOR} (2026-12-01)\n\n### Added\n\n`);
      expect(changelog).toContain('- `POST /api/v1/leads request body`: optional input field nickname added\n');
      // Released: the same document again is nothing to release.
      expect((await node('release.mjs', ['--today', '2026-12-01'], copy)).output).toContain('nothing to release');
      expect(changelog.indexOf(`## ${NEXT_MINOR}`)).toBeLessThan(changelog.indexOf(`## ${RELEASED}`));
      expect((await node('check-compat.mjs', [], copy)).code).toBe(0);
      expect((await node('generate-types.mjs', ['--check'], copy)).code).toBe(0);

      edit((document) => document.deleteIn([...SCHEMAS, 'LeadFields', 'properties', 'nickname']));
      const refused = await node('release.mjs', ['--today', '2026-12-02'], copy);
      expect(refused.output).toMatch(/refused: 2 breaking change\(s\) since [\d.]+:\n {2}BREAKING POST \/api\/v1\/leads request body: input field nickname removed/);
      expect(refused.code).toBe(1);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  }, 300_000);
});

import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import { OPENAPI_PATH, PROJECT_ROOT } from '../src/paths.js';

// What partners do before the service exists for them: mock the contract with Prism.
interface ExampleMap { [name: string]: { value: unknown } }
interface Operation { responses: Record<string, { content?: { 'application/json': { examples?: ExampleMap; example?: unknown } } }> }
const document = parse(readFileSync(OPENAPI_PATH, 'utf8')) as { paths: Record<string, Record<string, Operation>> };

function firstExample(path: string, method: string, status: string): unknown {
  const content = document.paths[path]![method]!.responses[status]!.content!['application/json'];
  return content.example ?? Object.values(content.examples ?? {})[0]!.value;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

let prism: ChildProcess;
let base: string;
const auth = { Authorization: 'Bearer lk7f3a9c2e1b_3xQ9v2LmT8rKp4WnZ6yB1cHd5JfGs0AeUoRiMtNqXw7' };

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  prism = spawn(path.join(PROJECT_ROOT, 'node_modules', '.bin', 'prism'), ['mock', OPENAPI_PATH, '--host', '127.0.0.1', '--port', String(port)], { stdio: 'ignore' });
  const deadline = Date.now() + 45_000;
  for (;;) {
    try {
      await fetch(`${base}/api/v1/me`, { headers: auth });
      return;
    } catch {
      if (Date.now() > deadline) throw new Error('Prism did not start');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}, 60_000);
afterAll(() => { prism?.kill(); });

describe('Prism mock of the OpenAPI document', () => {
  const lead = { name: 'Jane Doe', email: 'jane@acme-robotics.com' };
  const cases: Array<[string, string, string, RequestInit]> = [
    ['/api/v1/me', 'get', '200', {}],
    ['/api/v1/tags', 'get', '200', {}],
    ['/api/v1/leads/{id}', 'get', '200', {}],
    ['/api/v1/leads', 'post', '201', { method: 'POST', body: JSON.stringify(lead), headers: { 'Content-Type': 'application/json', Prefer: 'code=201' } }],
    ['/api/v1/leads/batch', 'post', '200', { method: 'POST', body: JSON.stringify({ leads: [lead] }), headers: { 'Content-Type': 'application/json' } }],
  ];

  it.each(cases)('%s %s answers its documented example', async (route, method, status, init) => {
    const url = `${base}${route.replace('{id}', '4821')}`;
    const response = await fetch(url, { ...init, headers: { ...auth, ...(init.headers as Record<string, string> | undefined) } });
    expect(response.status).toBe(Number(status));
    expect(await response.json()).toEqual(firstExample(route, method, status));
  });

  it('rejects a payload that breaks the contract, as the service would', async () => {
    const response = await fetch(`${base}/api/v1/leads`, { method: 'POST', body: JSON.stringify({ name: 'No contact' }), headers: { ...auth, 'Content-Type': 'application/json' } });
    expect(response.status).toBe(422);
  });
});

import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../..');

describe('lead-intake-api/client as an integrator compiles it', () => {
  it('type-checks test/client-compile/integrator.ts against the built declarations (wrong fields are errors)', () => {
    // Global setup built dist/; the snippet imports the package by name through its `exports`.
    const run = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'test/client-compile/tsconfig.json'], { cwd: ROOT, encoding: 'utf8' });
    expect({ status: run.status, output: run.stdout + run.stderr }).toEqual({ status: 0, output: '' });
  }, 60_000);
});

import { spawn } from 'node:child_process';
import path from 'node:path';
import { PUBLISHED_OPENAPI_PATH, PROJECT_ROOT } from '../../src/paths.js';
import { freePort } from './ports.js';

export interface PrismProcess {
  url: string;
  /** Everything Prism wrote so far. */
  log(): string;
  stop(): void;
}

const ATTEMPTS = 5;
const START_WITHIN_MS = 60_000;

/**
 * Prism (`mock` or `proxy <upstream>`, of the published document unless another is given) on a free port of 127.0.0.1, once it answers. Prism
 * cannot be given port 0, so the port is found free and released first: when another
 * process takes it in between, Prism exits, and it is started again on another port.
 */
export async function startPrism(command: ['mock'] | ['proxy', string], document = PUBLISHED_OPENAPI_PATH): Promise<PrismProcess> {
  let lastLog = '';
  for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
    const port = await freePort();
    const [mode, ...upstream] = command;
    const child = spawn(path.join(PROJECT_ROOT, 'node_modules', '.bin', 'prism'), [mode, document, ...upstream, '--host', '127.0.0.1', '--port', String(port)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    child.stdout.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    const url = `http://127.0.0.1:${port}`;
    for (const deadline = Date.now() + START_WITHIN_MS; !exited; ) {
      try {
        await fetch(`${url}/`);
        return {
          url,
          log: () => log,
          stop: () => {
            child.kill();
          },
        };
      } catch {
        if (Date.now() > deadline) {
          child.kill();
          throw new Error(`Prism did not start within ${START_WITHIN_MS} ms:\n${log}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    lastLog = log;
    if (!/EADDRINUSE/.test(log)) break;
  }
  throw new Error(`Prism exited before it answered:\n${lastLog}`);
}

import net from 'node:net';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, chmod } from 'node:fs/promises';
import { pino } from 'pino';
import { startEmbeddedDatabase } from '../src/db/embedded/start.ts';
const server = net.createServer(); server.listen(0, '127.0.0.1'); await once(server, 'listening');
const port = (server.address() as net.AddressInfo).port;
const base = await mkdtemp(path.join(os.tmpdir(), 'pc-')); await chmod(base, 0o755);
try { await startEmbeddedDatabase({ dir: path.join(base, 'pg'), port, logger: pino({ level: 'silent' }), ephemeral: true }); console.log('started?!'); }
catch (e) { console.log('message:', (e as Error).message, /Port \d+ is (held by|in use)|could not bind|already in use/i.test((e as Error).message)); }
server.close();

import { Writable } from 'node:stream';
import { describe, expect, it, jest } from '@jest/globals';
import express from 'express';
import { pino } from 'pino';
import supertest from 'supertest';
import { requestLogging } from '../../src/http/middleware/request-log.js';
import { eventually } from '../support/eventually.js';

// Below `info` the request logger skips pino-http's per-request work; what it writes must not
// change: the same `request errored` record for a 5xx, and a working `req.log`.

function appLoggingAt(level: string) {
  const lines: Array<Record<string, any>> = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString()));
      callback();
    },
  });
  const logger = pino({ level, redact: { paths: ['req.headers.authorization'], censor: '[redacted]' } }, stream);
  const app = express();
  app.use(requestLogging(logger));
  app.get('/ok', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/warn', (req, res) => {
    req.log.warn({ detail: 1 }, 'something to note');
    res.json({ ok: true });
  });
  app.get('/boom', () => {
    throw new Error('kaput');
  });
  app.use(((error, req, res, _next) => {
    req.log.error({ err: error }, 'unhandled error');
    res.status(500).json({ error: 'internal_error' });
  }) as express.ErrorRequestHandler);
  return { http: supertest(app), lines };
}

const shape = (line: Record<string, any>) => ({
  ...line,
  time: undefined,
  pid: undefined,
  hostname: undefined,
  responseTime: undefined,
  req: { ...line.req, id: undefined, remotePort: undefined, headers: { ...line.req.headers, host: undefined } },
  res: line.res && { ...line.res, headers: { ...line.res.headers, 'x-request-id': undefined, date: undefined } },
  err: line.err && { ...line.err, stack: undefined },
});

describe('request logging', () => {
  it('echoes a sane X-Request-Id and generates one otherwise, at every level', async () => {
    for (const level of ['info', 'warn']) {
      const { http } = appLoggingAt(level);
      expect((await http.get('/ok').set('X-Request-Id', 'trace-1')).headers['x-request-id']).toBe('trace-1');
      expect((await http.get('/ok').set('X-Request-Id', 'bad id!')).headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('writes the same records for errors and req.log below info as pino-http writes at info', async () => {
    const info = appLoggingAt('info');
    const warn = appLoggingAt('warn');
    for (const { http } of [info, warn]) {
      await http.get('/ok').set('Authorization', 'Bearer secret');
      await http.get('/warn').set('Authorization', 'Bearer secret').set('X-Request-Id', 'warned');
      await http.get('/boom').set('Authorization', 'Bearer secret').set('X-Request-Id', 'boomed');
    }
    // pino writes through a stream: wait for the records rather than for a fixed time.
    await eventually(async () => info.lines.length >= 5 && warn.lines.length >= 3);
    expect(info.lines.map((line) => line.msg)).toEqual(['request completed', 'something to note', 'request completed', 'unhandled error', 'request errored']);
    expect(warn.lines.map((line) => line.msg)).toEqual(['something to note', 'unhandled error', 'request errored']);
    const atInfo = info.lines.filter((line) => line.level >= 40).map(shape);
    expect(warn.lines.map(shape)).toEqual(atInfo);
    const errored = warn.lines.at(-1)!;
    expect(errored).toMatchObject({
      level: 50,
      req: { id: 'boomed', method: 'GET', url: '/boom', headers: { authorization: '[redacted]' } },
      res: { statusCode: 500 },
      err: { message: 'failed with status code 500' },
      responseTime: expect.any(Number),
    });
  });

  it('keeps req.log working below info when the module is loaded a second time in the process', async () => {
    // Jest gives each test file its own copy of the module, and a process may hold two copies
    // (the compiled and the source tree): both patch the same IncomingMessage prototype.
    const warn = appLoggingAt('warn');
    await jest.isolateModulesAsync(async () => {
      await import('../../src/http/middleware/request-log.js');
    });
    await warn.http.get('/warn');
    await warn.http.get('/boom');
    await eventually(async () => warn.lines.length >= 3);
    expect(warn.lines.map((line) => line.msg)).toEqual(['something to note', 'unhandled error', 'request errored']);
  });
});

import { randomUUID } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { pinoHttp, type GenReqId } from 'pino-http';

const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;

/**
 * Query values are what a person typed (the console's lead search takes an email or a name):
 * request records keep the parameters' names and drop their values, in `url` and `query`.
 */
function withoutQueryValues(req: { url?: string; query?: Record<string, unknown> }) {
  const url = req.url ?? '';
  const at = url.indexOf('?');
  const names =
    at < 0
      ? []
      : url
          .slice(at + 1)
          .split('&')
          .map((pair) => pair.split('=')[0]!)
          .filter(Boolean);
  return {
    ...req,
    url: at < 0 ? url : `${url.slice(0, at)}?${names.map((name) => `${name}=[redacted]`).join('&')}`,
    query: Object.fromEntries(Object.keys(req.query ?? {}).map((name) => [name, '[redacted]'])),
  };
}

// A 503 is the database being unreachable: logged once per outage where it is noticed
// (src/db/connect.ts), so its requests are ordinary lines, not one error each.
const errorWhen = (error: unknown, statusCode: number) => (error || (statusCode >= 500 && statusCode !== 503) ? 'error' : 'info');

// `req.log` below `info`: the child logger pino-http would bind, built on first use. A getter
// on the prototype (defining one on each request would push every request object into a slow
// shape); a request only carries the logger to build it from. Assigning `req.log` (as
// pino-http does at `info`) stores a plain property, as before. The keys are registry symbols:
// every copy of this module in a process (jest loads one per test file) patches the one
// prototype, and each must find the logger another copy stored.
const PARENT = Symbol.for('lead-intake.request-logger.parent');
const CHILD = Symbol.for('lead-intake.request-logger');
type LazyLogged = IncomingMessage & { [PARENT]?: Logger; [CHILD]?: Logger };
Object.defineProperty(IncomingMessage.prototype, 'log', {
  configurable: true,
  get(this: LazyLogged) {
    const parent = this[PARENT];
    return parent && (this[CHILD] ??= parent.child({ req: this }));
  },
  set(this: LazyLogged, value: Logger) {
    Object.defineProperty(this, 'log', { value, writable: true, configurable: true, enumerable: true });
  },
});

/**
 * Request ids and request logging (pino-http): X-Request-Id echoed or generated, `req.log`
 * bound to the request, and one line per finished request (`info`, or `error` for a 5xx).
 *
 * pino-http serializes the request (with redaction) into a child logger on every request, even
 * when nothing is logged at `info`: about an eighth of a cheap route's CPU. So while `info` is
 * off (LOG_LEVEL=warn and up), the same child logger is built only when something uses it, and
 * only 5xx completions are logged, with the record pino-http writes. At `info` and below,
 * pino-http runs as usual.
 */
export function requestLogging(logger: Logger): RequestHandler {
  const genReqId: GenReqId = (req, res) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', id);
    return id;
  };
  const full = pinoHttp({ logger, genReqId, customLogLevel: (_req, res, error) => errorWhen(error, res.statusCode), serializers: { req: withoutQueryValues } });
  // pino-http's own logger: the application logger with its request/response/error serializers.
  const httpLogger = full.logger;

  return (req, res, next) => {
    if (logger.isLevelEnabled('info')) {
      full(req, res, next);
      return;
    }
    req.id = genReqId(req, res);
    (req as LazyLogged)[PARENT] = httpLogger;
    const started = Date.now();
    // A response emits 'close' once, after 'finish' or alone, and 'error' seldom: the first of
    // them logs, and listeners die with the response (pino-http also listens to 'finish' and
    // removes all three, work every request pays for nothing here).
    let ended = false;
    const done = (error?: Error) => {
      if (ended) return;
      ended = true;
      if (errorWhen(error, res.statusCode) !== 'error') return;
      const failure = error ?? new Error(`failed with status code ${res.statusCode}`);
      req.log.error({ res, err: failure, responseTime: Date.now() - started }, 'request errored');
    };
    res.on('close', done);
    res.on('error', done);
    next();
  };
}

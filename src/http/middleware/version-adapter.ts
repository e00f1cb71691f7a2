import type { RequestHandler } from 'express';

/**
 * How a later path version differs from the shapes the handlers speak (the first version's,
 * typed from generated/api.ts): each function gets the operationId and a body, and returns
 * the body as the other side expects it; a body it does not concern comes back as it was.
 */
export interface VersionAdapter {
  /** A validated request body of this version, as the handler takes it. */
  request?(operationId: string, body: unknown): unknown;
  /** A body the handler (or the error handler) answers, as this version sends it. */
  response?(operationId: string, body: unknown): unknown;
}

/**
 * Runs after the request validator, so the request was checked against this version's
 * document, and wraps `res.json` inside the response validator's wrapper, so what is checked
 * and sent is this version's answer.
 */
export function adaptToVersion(operationId: string, adapt: VersionAdapter): RequestHandler {
  return (req, res, next) => {
    if (adapt.request && req.body !== undefined) req.body = adapt.request(operationId, req.body);
    if (adapt.response) {
      const send = res.json.bind(res);
      res.json = (body: unknown) => send(adapt.response!(operationId, body));
    }
    next();
  };
}

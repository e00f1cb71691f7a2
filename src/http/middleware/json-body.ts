import express, { type RequestHandler } from 'express';
import { REQUEST_BODY_MAX_BYTES } from '../../limits.js';

/** JSON only (415 otherwise); an empty body passes and fails the validator instead. */
const jsonOnly: RequestHandler = (req, _res, next) => {
  if (!req.is('application/json') && req.headers['content-length'] !== '0') {
    next(Object.assign(new Error('unsupported media type'), { status: 415 }));
    return;
  }
  next();
};

// PostgreSQL refuses NUL characters in text and jsonb: strip them so hostile input
// cannot turn into a 500.
const json = express.json({
  limit: REQUEST_BODY_MAX_BYTES,
  strict: false,
  type: () => true,
  reviver: (_key, value: unknown) => (typeof value === 'string' && value.includes('\u0000') ? value.replaceAll('\u0000', '') : value),
});

// The validator writes defaults into req.body; idempotency fingerprints the body as sent.
const keepBodyAsSent: RequestHandler = (req, _res, next) => {
  if (req.get('idempotency-key') !== undefined) req.bodyAsSent = structuredClone(req.body);
  next();
};

/** The steps that read a JSON request body, in order. */
export const jsonBody: readonly RequestHandler[] = [jsonOnly, json, keepBodyAsSent];

import express, { type RequestHandler } from 'express';
import { REQUEST_BODY_MAX_BYTES } from '../../limits.js';
import { storableValue } from '../../storable-text.js';

/** JSON only (415 otherwise); an empty body passes and fails the validator instead. */
const jsonOnly: RequestHandler = (req, _res, next) => {
  if (!req.is('application/json') && req.headers['content-length'] !== '0') {
    next(Object.assign(new Error('unsupported media type'), { status: 415 }));
    return;
  }
  next();
};

const json = express.json({ limit: REQUEST_BODY_MAX_BYTES, strict: false, type: () => true });

// The document's rule for text PostgreSQL cannot store (NUL, lone surrogates: src/storable-text.ts)
// applies to the parsed body, keys included, before the validator, the Idempotency-Key's
// fingerprint or anything else reads it.
const storableBody: RequestHandler = (req, _res, next) => {
  req.body = storableValue(req.body);
  next();
};

// The validator writes defaults into req.body; idempotency fingerprints the body as sent.
const keepBodyAsSent: RequestHandler = (req, _res, next) => {
  if (req.get('idempotency-key') !== undefined) req.bodyAsSent = structuredClone(req.body);
  next();
};

/** The steps that read a JSON request body, in order. */
export const jsonBody: readonly RequestHandler[] = [jsonOnly, json, storableBody, keepBodyAsSent];

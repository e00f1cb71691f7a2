import type { RequestHandler } from 'express';
import { ClientGone, clientGone } from './client-gone.js';

type Steps = ReadonlyArray<RequestHandler | readonly RequestHandler[]>;

/**
 * An operation's steps as one express handler that runs them in order, as the route would run
 * them as separate handlers: `next()` goes on to the next step, `next(error)` and a thrown
 * error or rejected promise go to the error handlers, `next('route')` to the next route.
 * express's router pays a layer (a match, a dispatch, a try/catch and a promise check) per
 * handler of a route; an API route has seven to ten steps and the cheapest routes (GET /me)
 * spend a visible share of their time there, so each operation is bound as one handler.
 *
 * A request whose client has gone stops before its next step (ClientGone goes to the error
 * handlers): steps after an await (authentication, the rate limit) then never take a slot
 * for it, nor run a handler on a body that never arrived.
 */
export function inOrder(steps: Steps): RequestHandler {
  const flat = steps.flat();
  return (req, res, done) => {
    let index = 0;
    const next = (signal?: unknown): void => {
      if (signal !== undefined && signal !== null) {
        done(signal);
        return;
      }
      const step = flat[index++];
      if (!step) {
        done();
        return;
      }
      if (clientGone(res)) {
        done(new ClientGone());
        return;
      }
      try {
        const result: unknown = step(req, res, next);
        if (isThenable(result)) result.then(undefined, (error: unknown) => done(error ?? new Error('Rejected promise')));
      } catch (error) {
        done(error);
      }
    };
    next();
  };
}

const isThenable = (value: unknown): value is PromiseLike<unknown> => value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function';

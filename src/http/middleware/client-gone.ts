import type { ServerResponse } from 'node:http';
import onFinished from 'on-finished';

/**
 * The client went away before its answer: its socket closed or can no longer be written to
 * (a client's timeout, a load tool ending its run mid-request). Nothing more is done for such a
 * request, and it is no error of the service's.
 */
export class ClientGone extends Error {
  constructor() {
    super('the client went away before its answer');
  }
}

/** Whether the answer to this request can no longer reach its client (an answer already sent is not that). */
export const clientGone = (res: ServerResponse): boolean => !res.writableEnded && onFinished.isFinished(res) === true;

/** body-parser's error for a body whose client went away while it was being read. */
export const isBodyAborted = (error: unknown): boolean => typeof error === 'object' && error !== null && (error as { type?: unknown }).type === 'request.aborted';

import type { Request, Response } from 'express';
import type { operations } from '../../generated/api.js';

// Handler types derived from the generated `operations`: a handler's request body, query,
// path parameters and the bodies it may send are those the OpenAPI document gives its
// operation, so a spec change that breaks a handler fails the typecheck there.

export type OperationId = keyof operations;

type JsonBodyOf<Answer> = Answer extends { content: { 'application/json': infer Body } } ? Body : never;
type ResponsesOf<K extends OperationId> = operations[K]['responses'];
type Present<T> = [NonNullable<T>] extends [never] ? Record<string, never> : NonNullable<T>;

/** The bodies a handler sends itself: its 2xx answers. Errors are thrown as ApiError and mapped in one place. */
export type SuccessBody<K extends OperationId> = {
  [Status in keyof ResponsesOf<K>]: Status extends 200 | 201 ? JsonBodyOf<ResponsesOf<K>[Status]> : never;
}[keyof ResponsesOf<K>];

/** The JSON request body once validated (defaults filled in by the validator, so still optional in the type). */
export type RequestBody<K extends OperationId> = operations[K] extends { requestBody: infer Body } ? JsonBodyOf<Body> : undefined;

/** Path and query parameters after the validator coerced them (`id` is a number, `include_archived` a boolean). */
export type PathParameters<K extends OperationId> = Present<operations[K]['parameters']['path']>;
export type QueryParameters<K extends OperationId> = Present<operations[K]['parameters']['query']>;

export type OperationRequest<K extends OperationId> = Request<PathParameters<K>, SuccessBody<K>, RequestBody<K>, QueryParameters<K>>;
export type OperationResponse<K extends OperationId> = Response<SuccessBody<K>>;
export type OperationHandler<K extends OperationId> = (req: OperationRequest<K>, res: OperationResponse<K>) => void | Promise<void>;

/**
 * One handler per operationId of the document: a spec operation without a handler, or a
 * handler for an operation the spec lacks, fails the typecheck.
 */
export type OperationHandlers = { [K in OperationId]: OperationHandler<K> };

import type { paths } from '../../generated/api.js';

// Every type here is looked up from the generated `paths` (operation by path and method,
// then its responses and request body), never from schema names, so renaming or merging
// schemas in the OpenAPI document leaves the client's types intact.

type Operation<P extends keyof paths, M extends keyof paths[P]> = NonNullable<paths[P][M]>;

export type GetMeOperation = Operation<'/api/v1/me', 'get'>;
export type ListTagsOperation = Operation<'/api/v1/tags', 'get'>;
export type GetLeadOperation = Operation<'/api/v1/leads/{id}', 'get'>;
export type CreateLeadOperation = Operation<'/api/v1/leads', 'post'>;
export type CreateBatchOperation = Operation<'/api/v1/leads/batch', 'post'>;

type Responses<Op> = Op extends { responses: infer R } ? R : never;
type JsonOf<R> = R extends { content: { 'application/json': infer Body } } ? Body : never;
type JsonRequestBody<Op> = Op extends { requestBody?: { content: { 'application/json': infer Body } } } ? Body : never;

type SuccessCode = 200 | 201 | 202 | 203 | 204 | 205 | 206;
type SuccessStatus<Op> = Extract<keyof Responses<Op>, SuccessCode>;
type ErrorStatus<Op> = Exclude<Extract<keyof Responses<Op>, number>, SuccessCode>;

/** The parsed JSON body of one documented status of an operation. */
export type ResponseBody<Op, Status extends keyof Responses<Op>> = JsonOf<Responses<Op>[Status]>;

/**
 * The discriminant given to a documented error body that has no `error` code of its own:
 * the `422` body (`{ errors }`) and the unknown-route `404` (`{ message }`).
 */
export type MissingErrorCode<Status> = Status extends 422 ? 'validation_failed' : Status extends 404 ? 'route_not_found' : `http_${Status & number}`;

/**
 * A documented error body, with `error` added where the body has none, and a `message` where
 * it has none (the 422 body: a one-line summary of `errors`), so every error reads the same
 * way (distributes over unions).
 */
export type WithErrorCode<Status, Body> = Body extends { error: string } ? Body : Body & { error: MissingErrorCode<Status>; message: string };

/** The request could not be completed: every attempt failed before an answer arrived. */
export interface NetworkError {
  error: 'network_error';
  message: string;
  /** What the last attempt threw (a `TypeError('fetch failed')` with its own cause, a timeout...). */
  cause: unknown;
}

/** An answer the document does not describe: a `5xx` (after the retries), or a body that is not JSON. */
export interface UnexpectedResponseError {
  error: 'unexpected_response';
  message: string;
  /** The body as received: parsed JSON when it was JSON, else the text. */
  body: unknown;
}

/** What every result carries besides its body. */
export interface ResponseInfo {
  /** `X-Request-Id` of the answer: quote it when contacting support. */
  requestId: string | null;
  /** How many HTTP requests the call took (retries included). */
  attempts: number;
  /** The answer's headers (`null` when no answer arrived). */
  headers: Headers | null;
}

export type ApiSuccess<Op> = {
  [Status in SuccessStatus<Op>]: { ok: true; status: Status; data: ResponseBody<Op, Status>; error?: never } & ResponseInfo & {
      /** `true` when the answer is a stored one replayed for the same `Idempotency-Key` (`Idempotency-Replayed: true`). */
      replayed: boolean;
    };
}[SuccessStatus<Op>];

export type ApiDocumentedFailure<Op> = {
  [Status in ErrorStatus<Op>]: { ok: false; status: Status; data?: never; error: WithErrorCode<Status, ResponseBody<Op, Status>> } & ResponseInfo;
}[ErrorStatus<Op>];

export type ApiTransportFailure =
  | ({ ok: false; status: null; data?: never; error: NetworkError } & ResponseInfo)
  | ({ ok: false; status: number | null; data?: never; error: UnexpectedResponseError } & ResponseInfo);

export type ApiFailure<Op> = ApiDocumentedFailure<Op> | ApiTransportFailure;

/**
 * The outcome of one call: `ok` tells success from failure; on failure `error.error` is a
 * string literal on every variant, so `switch (result.error.error)` narrows to one body.
 */
export type ApiResult<Op> = ApiSuccess<Op> | ApiFailure<Op>;

/** The error bodies one operation can give (after `WithErrorCode`), plus the transport ones. */
export type ApiError<Op> = ApiFailure<Op>['error'];

/** A POST's result also names the `Idempotency-Key` it was sent with (to resend it later). */
export interface PostOptions {
  /** Sent as `Idempotency-Key`; by default a new UUID per call, the same on the client's own retries. */
  idempotencyKey?: string;
}

export type PostResult<Op> = ApiResult<Op> & { idempotencyKey: string };

// ---- request bodies ----------------------------------------------------------------------

/** The JSON request body exactly as generated (switches may be listed as required there). */
export type GeneratedRequestBody<Op> = JsonRequestBody<Op>;

type BatchRequestBody = JsonRequestBody<CreateBatchOperation>;

/** The call-level switches: the batch body's members besides `leads` (`on_duplicate`, `dry_run`, ...). */
export type SwitchName = Exclude<keyof BatchRequestBody, 'leads'>;
export type Switches = Partial<Pick<BatchRequestBody, SwitchName>>;

// The server applies the switches' defaults, so the client never requires them (whether or
// not the generated types mark defaulted request properties as required).
type OptionalSwitches<Body> = Body extends unknown ? Omit<Body, SwitchName> & Partial<Pick<Body, SwitchName & keyof Body>> : never;

/** `POST /leads` body: the lead's fields and the switches in one object. */
export type CreateLeadBody = OptionalSwitches<JsonRequestBody<CreateLeadOperation>>;
/** `POST /leads/batch` body: `leads` (1 to 100 rows) and the switches. */
export type CreateBatchBody = OptionalSwitches<BatchRequestBody>;
/** One lead of a batch (the lead's fields without switches). */
export type LeadRow = BatchRequestBody['leads'][number];

// ---- named response shapes, for integrators ------------------------------------------------

export type Me = ResponseBody<GetMeOperation, 200>['data'];
export type Tag = ResponseBody<ListTagsOperation, 200>['data'][number];
export type Lead = ResponseBody<GetLeadOperation, 200>['data'];
export type LeadWriteMeta = ResponseBody<CreateLeadOperation, 201>['meta'];
export type BatchRowResult = ResponseBody<CreateBatchOperation, 200>['data'][number];
export type BatchMeta = ResponseBody<CreateBatchOperation, 200>['meta'];

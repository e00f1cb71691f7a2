import { describe, expect, it } from '@jest/globals';
import type { Request, Response } from 'express';
import { readContract } from '../../src/http/contract-routes.js';
import { ApiError, NOT_FOUND_BODY } from '../../src/http/errors.js';
import { integerPathParameters } from '../../src/http/middleware/route-guards.js';
import { OPENAPI_PATH } from '../../src/paths.js';

// GET /leads/{id} runs without the request validator outside the tests; this checks what
// takes its place there. (In the tests the validator runs after it, so the HTTP tests of
// the route alone could not tell whether the check below happens.)

const getLead = readContract(OPENAPI_PATH).operations.find((operation) => operation.operationId === 'getLead')!;

function run(id: string): { params: Record<string, unknown>; error: unknown; next: boolean } {
  const req = { params: { id } } as unknown as Request;
  let next = false;
  try {
    integerPathParameters(getLead.integerPathOnly!)(req, {} as Response, () => {
      next = true;
    });
    return { params: req.params, error: null, next };
  } catch (error) {
    return { params: req.params, error, next };
  }
}

describe('integer path parameters without the request validator', () => {
  it('reads the bounds of GET /leads/{id} from the document: 1 to 2^53 - 1', () => {
    expect(getLead.integerPathOnly).toEqual([{ name: 'id', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }]);
  });

  it('turns an id within the bounds into a number', () => {
    expect(run('4211')).toEqual({ params: { id: 4211 }, error: null, next: true });
    expect(run(String(Number.MAX_SAFE_INTEGER))).toEqual({ params: { id: Number.MAX_SAFE_INTEGER }, error: null, next: true });
  });

  it('answers an id outside them as a missing lead (404 not_found), as the validator does', () => {
    for (const id of ['0', '9007199254740992', '99999999999999999999']) {
      const { error, next } = run(id);
      expect(next).toBe(false);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ status: 404, body: NOT_FOUND_BODY });
    }
  });
});

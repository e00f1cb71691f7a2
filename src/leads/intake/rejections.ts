import type { DuplicateLeadError } from '../../../generated/api.js';

// Problems found while processing a lead row, thrown before anything of the row is kept.

/** A payload problem found while processing: 422 on POST /leads, a failed row in a batch. */
export class RowRejected extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** A match under `on_duplicate: error`: 409 on POST /leads, a failed row carrying lead_id in a batch. */
export class DuplicateRejected extends Error {
  constructor(
    readonly match: Pick<DuplicateLeadError, 'lead_id' | 'matched_on' | 'match_kind' | 'conflicts'>,
    message: string,
  ) {
    super(message);
  }
}

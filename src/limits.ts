// Caps from the contract (contract.md). The OpenAPI document enforces the same numbers on
// the raw payload; these apply again after `email`+`emails` and `phone`+`phones` are merged.
export const BATCH_MAX = 100;
export const MAX_EMAILS = 10;
export const MAX_PHONES = 10;
export const MIN_PHONE_DIGITS = 7;
export const PHONE_MATCH_DIGITS = 10;

/**
 * An operator action refused by a service or by the arguments that ask for it: the admin CLI
 * prints it as `{ "error": code, "message": text }` on stderr and exits non-zero.
 */
export class Refused extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

import type { IntakeSwitches } from '../../../generated/api.js';

// The call-level switches of an intake, in one place: what a request asks for, the defaults
// the document gives, and when two requests' rows may run as one set. A new switch is added
// here and nowhere else.

export interface IntakeOptions {
  onDuplicate: NonNullable<IntakeSwitches['on_duplicate']>;
  createMissingTags: boolean;
  enrich: boolean;
}

/** A request's switches with the document's defaults filled in. */
export function switchesOf(request: IntakeSwitches): { options: IntakeOptions; dryRun: boolean } {
  return {
    options: {
      onDuplicate: request.on_duplicate ?? 'update',
      createMissingTags: request.create_missing_tags ?? true,
      enrich: request.enrich ?? true,
    },
    dryRun: request.dry_run ?? false,
  };
}

/** Whether two requests ask for the same switches (every one of them). */
export const sameOptions = (a: IntakeOptions, b: IntakeOptions): boolean => (Object.keys(a) as Array<keyof IntakeOptions>).every((name) => a[name] === b[name]);

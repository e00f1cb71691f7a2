import { nonEmpty } from '../input.js';

// A tag's settings as an operator types them.

export const parseTagName = (value: string, flag: string) => nonEmpty(value, flag);

/** A colour, as the operator writes it (a name or a hex code), up to 32 characters. */
export const parseTagColour = (value: string, flag: string) => nonEmpty(value, flag, 32);

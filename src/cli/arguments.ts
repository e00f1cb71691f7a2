import { invalidInput } from '../input.js';

// What only the CLI's flags need; the rules for the values themselves are shared with the
// console: src/input.ts and each feature's `input.ts`.

/** The one flag given among alternatives (`--a A | --b B`): refused when none or several are. */
export function exactlyOne<K extends string>(options: Partial<Record<NoInfer<K>, string>>, flags: Record<K, string>): [K, string] {
  const given = (Object.keys(flags) as K[]).filter((key) => options[key] !== undefined);
  if (given.length !== 1)
    throw invalidInput(`Give exactly one of ${Object.values<string>(flags).join(', ')}${given.length ? `, not ${given.map((key) => flags[key]).join(' and ')}` : ''}.`);
  return [given[0]!, options[given[0]!]!];
}

/** For repeatable options: every value in the order given. */
export const collect = (value: string, previous: string[]) => [...previous, value];

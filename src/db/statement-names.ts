// Which statement texts go out as named statements, and under which name: the prepared
// statements (db/prepared.ts) enter theirs when they are built, the pool (db/connect.ts)
// looks each text up when it sends it. A module of its own, so neither imports the other.

/** Text -> statement name of every prepared statement. */
const statementNames = new Map<string, string>();

export function nameStatement(text: string, name: string): void {
  statementNames.set(text, name);
}

/** The name a prepared statement's text is sent under, or undefined for any other text. */
export const statementNameOf = (text: string): string | undefined => statementNames.get(text);

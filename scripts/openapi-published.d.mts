/** The published document's text, from the source document's text (scripts/openapi-published.mjs). */
export function publishedDocument(sourceText: string): string;

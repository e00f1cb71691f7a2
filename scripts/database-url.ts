/** The URL of another database on the server that `serverUrl` names (tests and the benchmark make their own). */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

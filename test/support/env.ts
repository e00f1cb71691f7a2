// Set by global-setup in process.env (inherited by the jest workers it precedes), so
// concurrent test runs on one machine never read each other's settings.
export interface TestEnvironment {
  adminUrl: string;
  runId: string;
  templateDatabase: string;
  /** The server is a Citus coordinator: test databases are made on every node (test/support/citus-databases.ts). */
  citus: boolean;
  redisUrl: string | null;
}

const VARIABLE = 'LEAD_INTAKE_TEST_ENV';

export function writeTestEnvironment(env: TestEnvironment): void {
  process.env[VARIABLE] = JSON.stringify(env);
}

export function readTestEnvironment(): TestEnvironment {
  const raw = process.env[VARIABLE];
  if (!raw) throw new Error('test environment missing: run the tests through jest (global-setup)');
  return JSON.parse(raw) as TestEnvironment;
}

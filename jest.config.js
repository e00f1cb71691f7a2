// Jest runs in native ESM mode (node --experimental-vm-modules) because `got` and its
// dependencies are ESM-only; @swc/jest strips the TypeScript without type checking
// (`npm run typecheck` does that once for the whole tree).
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
  // Tests start CLI processes and apps of their own, each seconds on a loaded 2-core machine
  // (CI runs three files at a time beside the servers they use).
  testTimeout: 60000,
  // The suite mostly waits on servers, receivers and child processes, so one more file at a
  // time than there are cores keeps them busy.
  maxWorkers: 3,
};

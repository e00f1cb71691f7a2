import { register } from 'tsx/esm/api';

register();

export default async function globalTeardown() {
  const { default: cleanupDatabase } = await import('./cleanup-database.ts');
  await cleanupDatabase();
}

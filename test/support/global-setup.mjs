// Jest's global setup runs outside its module mapper; tsx's ESM loader lets it import the
// TypeScript sources (and their `.js` specifiers) the way the app does.
import { register } from 'tsx/esm/api';

register();

export default async function globalSetup() {
  const { default: prepareDatabase } = await import('./prepare-database.ts');
  await prepareDatabase();
}

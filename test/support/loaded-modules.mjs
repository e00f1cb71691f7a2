// `node --import ./test/support/loaded-modules.mjs ...`: appends every module the process
// resolves through the ES module loader (its own files, packages it imports, CommonJS packages
// imported from ES modules) to the file LOADED_MODULES_FILE names, one URL a line.
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(${JSON.stringify(process.env.LOADED_MODULES_FILE)}, resolved.url + '\\n');
  return resolved;
}`)}`,
);

// `npm run cli`: tracing first (when OpenTelemetry's variables ask for it), then the command
// (src/cli/program.ts).
import { startTracing } from '../tracing/switch.js';

await startTracing('lead-intake-cli');
const { runCli } = await import('./program.js');
await runCli();

// `npm start`: tracing first (when OpenTelemetry's variables ask for it), so that the modules
// it instruments are imported after it; then the API process (src/api-process.ts).
import { startTracing } from './tracing/switch.js';

await startTracing('lead-intake-api');
await import('./api-process.js');

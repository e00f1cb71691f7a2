// `npm run worker`: tracing first (when OpenTelemetry's variables ask for it), so that the
// modules it instruments are imported after it; then the worker process (src/worker-process.ts).
import { startTracing } from './tracing/switch.js';

await startTracing('lead-intake-worker');
await import('./worker-process.js');

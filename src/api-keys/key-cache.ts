import pg from 'pg';
import type { Logger } from 'pino';

const CHANNEL = 'api_key_changed';
const TTL_MS = 60_000;
const RECONNECT_MS = 1_000;

/**
 * Authenticated keys kept in memory, so a request costs no database round trip for its key.
 * Exact rather than eventually right: a trigger NOTIFYs every change to a key, and while the
 * LISTEN connection is down nothing is served from memory (every request reads the database).
 */
export class ApiKeyCache<T> {
  private readonly entries = new Map<string, { value: T; storedAt: number }>();
  private client: pg.Client | null = null;
  private listening = false;
  private stopped = false;
  private changes = 0;

  constructor(private readonly connectionString: string, private readonly logger: Logger) {}

  async start(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.connectionString });
    this.client = client;
    const lost = () => {
      if (this.client !== client) return;
      this.listening = false;
      this.entries.clear();
      this.client = null;
      client.end().catch(() => {});
      if (!this.stopped) setTimeout(() => void this.start(), RECONNECT_MS).unref();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => {
      this.changes += 1;
      if (message.payload) this.entries.delete(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      this.listening = true;
    } catch (error) {
      this.logger.warn({ err: error }, 'API key cache cannot listen for changes; authenticating from the database');
      lost();
    }
  }

  /** A counter to take before reading a key from the database and hand back to `set`. */
  get version(): number {
    return this.changes;
  }

  get(prefix: string): T | undefined {
    if (!this.listening) return undefined;
    const entry = this.entries.get(prefix);
    if (!entry || Date.now() - entry.storedAt > TTL_MS) return undefined;
    return entry.value;
  }

  /** Stores a value read at `version`, unless some key changed since (it may be stale). */
  set(prefix: string, value: T, version: number): void {
    if (this.listening && version === this.changes) this.entries.set(prefix, { value, storedAt: Date.now() });
  }

  update(prefix: string, change: (value: T) => T): void {
    const entry = this.entries.get(prefix);
    if (entry) entry.value = change(entry.value);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.listening = false;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}

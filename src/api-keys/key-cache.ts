import pg from 'pg';
import type { Logger } from 'pino';
import { OutageLog } from '../db/availability.js';
import { CONNECT_TIMEOUT_MS } from '../db/connect.js';
import { sessionName } from '../db/session-name.js';

const CHANNEL = 'api_key_changed';
const TTL_MS = 60_000;
const RECONNECT_MS = 1_000;

/** Hears what the cache's LISTEN connection hears (see PrefixView). */
export interface KeyChangeFollower {
  /** LISTEN is active: every later change is reported. Awaited by start(); must not throw. */
  listening(): Promise<void>;
  changed(prefix: string): void;
  /** Changes may go unheard from now on: the connection is lost or the cache stopped. */
  lost(): void;
}

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
  private readonly outage: OutageLog;
  private readonly followers: KeyChangeFollower[] = [];

  constructor(
    private readonly connectionString: string,
    logger: Logger,
  ) {
    this.outage = new OutageLog(logger, {
      down: 'API key cache lost its LISTEN connection: authenticating every request from the database, reconnecting every second (logged once per outage)',
      up: 'API key cache listening for key changes again',
    });
  }

  /** Call before start(). */
  follow(follower: KeyChangeFollower): void {
    this.followers.push(follower);
  }

  async start(): Promise<void> {
    if (this.stopped) return;
    // TCP keepalive: a connection that dies without a word (a half-open socket after a
    // network failure) must still end in 'error', or the cache and prefix view would trust it.
    const client = new pg.Client({
      connectionString: this.connectionString,
      application_name: sessionName('api-key-listen'),
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    this.client = client;
    // The connection's 'error' and 'end' both land here: the cache empties (it can no
    // longer hear about changes) and a new connection is tried after RECONNECT_MS.
    const lost = (error?: unknown) => {
      if (this.client !== client) return;
      this.listening = false;
      for (const follower of this.followers) follower.lost();
      this.entries.clear();
      this.client = null;
      client.end().catch(() => {});
      if (this.stopped) return;
      this.outage.failed(error ?? new Error('LISTEN connection ended'));
      setTimeout(() => void this.start(), RECONNECT_MS).unref();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      if (message.payload) this.changedHere(message.payload);
      else this.changes += 1;
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      this.listening = true;
      this.outage.recovered();
      for (const follower of this.followers) await follower.listening();
    } catch (error) {
      lost(error);
    }
  }

  /**
   * A key changed (created, revoked, orphaned): forgotten here and told to the followers. Run
   * for each notification, and by this process right after it commits a change of its own, so
   * its next request sees the change without waiting for the notification to come back.
   */
  changedHere(prefix: string): void {
    this.changes += 1;
    this.entries.delete(prefix);
    for (const follower of this.followers) follower.changed(prefix);
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
    for (const follower of this.followers) follower.lost();
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}

// Steady API traffic for the fault test, and a ledger of everything sent and answered, so
// the checks afterwards can tell what was acknowledged (and must exist) from what was not.
//
// Each virtual user owns its people (unique emails), so the writes to one person are
// sequential and "what was sent last" is well defined. It cycles through: a new lead, an
// update of one of its people (new job title, a new tag; the first update adds the tag that
// fires the tag_added workflow), a batch (new people and an update), an idempotent write
// (single or batch) repeated with the same key and body until it is answered 2xx, and reads
// (GET /leads/{id}, /me, /tags).

export const VIP_TAG = 'vip';
const REQUEST_TIMEOUT_MS = 10_000;

export interface Answer {
  kind: string;
  startedAt: number;
  ms: number;
  /** 0: no answer (network error or timeout after REQUEST_TIMEOUT_MS). */
  status: number;
  body: unknown;
  retryAfter: string | null;
  replayed: boolean;
}

/** One write of one person's fields, as sent. */
export interface PersonWrite {
  jobTitle: string;
  tags: string[];
  sentAt: number;
  /**
   * true: answered 2xx (must be saved). false: answered otherwise (may still be saved: a
   * commit can race the outage). null: never answered (may be applied at any time after).
   */
  acknowledged: boolean | null;
  leadId: number | null;
}

export interface Person {
  email: string;
  name: string;
  writes: PersonWrite[];
}

export interface IdempotentCall {
  key: string;
  emails: string[];
  answers: Answer[];
}

export interface Ledger {
  answers: Answer[];
  people: Map<string, Person>;
  idempotent: IdempotentCall[];
}

interface Target {
  apiUrl: string;
  token: string;
}

type LeadResult = { data?: { id?: number; lead_id?: number | null; status?: string }[] | { id?: number } };

export class Traffic {
  readonly ledger: Ledger = { answers: [], people: new Map(), idempotent: [] };
  private stopping = false;
  private running: Promise<void>[] = [];

  constructor(
    private readonly target: Target,
    private readonly users: number,
    private readonly pauseMs: number,
    private readonly label: string,
  ) {}

  start(): void {
    this.running = Array.from({ length: this.users }, (_, user) => this.user(user));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running);
  }

  private async user(user: number): Promise<void> {
    const mine: Person[] = [];
    let counter = 0;
    let pendingIdempotent: { call: IdempotentCall; path: string; body: unknown } | null = null;
    const fresh = (): Person => {
      counter += 1;
      const email = `p-${this.label}-${user}-${counter}@faults.example`;
      const person: Person = { email, name: `Person ${user}-${counter}`, writes: [] };
      this.ledger.people.set(email, person);
      return person;
    };
    const acknowledgedPeople = () => mine.filter((person) => person.writes.some((write) => write.acknowledged));
    for (let step = 0; !this.stopping; step += 1) {
      // An idempotent call answered with anything but 2xx is retried, same key and body, before anything else.
      if (pendingIdempotent) {
        const answer = await this.send('idempotent-retry', 'POST', pendingIdempotent.path, pendingIdempotent.body, pendingIdempotent.call.key);
        pendingIdempotent.call.answers.push(answer);
        this.noteWrites(pendingIdempotent.call.emails, answer);
        if (answer.status >= 200 && answer.status < 300) pendingIdempotent = null;
        await this.pause();
        continue;
      }
      const known = acknowledgedPeople();
      const existing = known.length > 0 ? known[step % known.length]! : null;
      switch (step % 6) {
        case 0: {
          const person = fresh();
          mine.push(person);
          await this.write('create', [person], 'single');
          break;
        }
        case 1:
          if (existing) await this.write('update', [existing], 'single');
          break;
        case 2: {
          const people = [fresh(), fresh(), fresh()];
          mine.push(...people);
          await this.write('batch', existing ? [...people, existing] : people, 'batch');
          break;
        }
        case 3: {
          const people = step % 12 === 3 ? [fresh()] : [fresh(), fresh()];
          mine.push(...people);
          const key = `idem-${this.label}-${user}-${step}`;
          const call: IdempotentCall = { key, emails: people.map((person) => person.email), answers: [] };
          this.ledger.idempotent.push(call);
          const { path, body } = this.writeRequest(people, people.length === 1 ? 'single' : 'batch');
          // Sent twice in a row: the second must replay the first (or, after an error, run it).
          for (let attempt = 0; attempt < 2; attempt += 1) {
            const answer = await this.send(attempt === 0 ? 'idempotent' : 'idempotent-retry', 'POST', path, body, key);
            call.answers.push(answer);
            this.noteWrites(call.emails, answer);
          }
          if (!call.answers.some((answer) => answer.status >= 200 && answer.status < 300)) pendingIdempotent = { call, path, body };
          break;
        }
        case 4:
          if (existing) {
            const leadId = existing.writes.find((write) => write.acknowledged && write.leadId !== null)?.leadId;
            if (leadId) await this.send('read-lead', 'GET', `/leads/${leadId}`);
          }
          break;
        default:
          await this.send(step % 12 === 5 ? 'read-me' : 'read-tags', 'GET', step % 12 === 5 ? '/me' : '/tags');
      }
      await this.pause();
    }
  }

  /** The next write of each person: a new job title, and a tag (the first update of a person adds VIP_TAG). */
  private writeRequest(people: Person[], shape: 'single' | 'batch'): { path: string; body: unknown } {
    const leads = people.map((person) => {
      const version = person.writes.length;
      const tags = version === 0 ? ['faults'] : version === 1 ? [VIP_TAG] : [`u${version}`];
      const lead = { name: person.name, email: person.email, job_title: `Title ${version}`, tags };
      person.writes.push({ jobTitle: lead.job_title, tags, sentAt: Date.now(), acknowledged: false, leadId: null });
      return lead;
    });
    if (shape === 'single') return { path: '/leads', body: { ...leads[0], enrich: false } };
    return { path: '/leads/batch', body: { leads, enrich: false } };
  }

  private async write(kind: string, people: Person[], shape: 'single' | 'batch'): Promise<void> {
    const { path, body } = this.writeRequest(people, shape);
    this.noteWrites(
      people.map((person) => person.email),
      await this.send(kind, 'POST', path, body),
    );
  }

  /** Marks each person's latest write with the answer: acknowledged (2xx and its row not failed), or in doubt (no answer). */
  private noteWrites(emails: string[], answer: Answer): void {
    const ok = answer.status >= 200 && answer.status < 300;
    const data = (answer.body as LeadResult | null)?.data;
    emails.forEach((email, index) => {
      const write = this.ledger.people.get(email)!.writes.at(-1)!;
      if (answer.status === 0 && write.acknowledged === false) write.acknowledged = null;
      if (!ok) return;
      const row = Array.isArray(data) ? data[index] : data;
      const leadId = Array.isArray(data) ? ((row as { lead_id?: number | null } | undefined)?.lead_id ?? null) : ((row as { id?: number } | undefined)?.id ?? null);
      const failed = Array.isArray(data) && (row as { status?: string } | undefined)?.status === 'failed';
      if (!failed) {
        write.acknowledged = true;
        write.leadId = leadId;
      }
    });
  }

  private async send(kind: string, method: string, path: string, body?: unknown, idempotencyKey?: string): Promise<Answer> {
    const startedAt = Date.now();
    const answer: Answer = { kind, startedAt, ms: 0, status: 0, body: null, retryAfter: null, replayed: false };
    try {
      const response = await fetch(`${this.target.apiUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.target.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      answer.status = response.status;
      answer.retryAfter = response.headers.get('retry-after');
      answer.replayed = response.headers.get('idempotency-replayed') === 'true';
      try {
        answer.body = JSON.parse(text);
      } catch {
        answer.body = text;
      }
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      answer.body = cause === undefined ? String(error) : `${String(error)} (${String(cause)})`;
    }
    answer.ms = Date.now() - startedAt;
    this.ledger.answers.push(answer);
    return answer;
  }

  private pause(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, this.pauseMs));
  }
}

/** /readyz every `everyMs`: its answers and how long each took. */
export class ReadinessProbe {
  readonly answers: Array<{ startedAt: number; ms: number; status: number }> = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly baseUrl: string,
    private readonly everyMs: number,
  ) {}

  start(): void {
    const probe = async () => {
      const startedAt = Date.now();
      let status = 0;
      try {
        status = (await fetch(`${this.baseUrl}/readyz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })).status;
      } catch {
        /* no answer: status 0 */
      }
      this.answers.push({ startedAt, ms: Date.now() - startedAt, status });
      if (this.timer !== null) this.timer = setTimeout(() => void probe(), this.everyMs);
    };
    this.timer = setTimeout(() => void probe(), 0);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

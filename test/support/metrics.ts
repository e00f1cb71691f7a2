// Reads a Prometheus text exposition (what GET /metrics answers) into samples.

export interface Samples {
  /** The sample's value, or 0 when the exposition has no such sample. */
  value(name: string, labels?: Record<string, string>): number;
  /** Whether a sample of this name and labels is there. */
  has(name: string, labels?: Record<string, string>): boolean;
  /** Every sample of this name: its labels and value. */
  all(name: string): Array<{ labels: Record<string, string>; value: number }>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

const keyOf = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.keys(labels)
    .sort()
    .map((label) => `${label}=${JSON.stringify(labels[label])}`)
    .join(',')}}`;

export function parseMetrics(text: string): Samples {
  const samples = new Map<string, { name: string; labels: Record<string, string>; value: number }>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels = Object.fromEntries([...(match[2] ?? '').matchAll(LABEL)].map(([, label, value]) => [label!, JSON.parse(`"${value}"`) as string]));
    samples.set(keyOf(match[1]!, labels), { name: match[1]!, labels, value: Number(match[3]) });
  }
  return {
    value: (name, labels = {}) => samples.get(keyOf(name, labels))?.value ?? 0,
    has: (name, labels = {}) => samples.has(keyOf(name, labels)),
    all: (name) => [...samples.values()].filter((sample) => sample.name === name).map(({ labels, value }) => ({ labels, value })),
  };
}

/** GET /metrics: the answer must be Prometheus's text format. */
export async function scrape(metricsUrl: string): Promise<Samples> {
  const response = await fetch(metricsUrl);
  if (response.status !== 200) throw new Error(`GET ${metricsUrl} answered ${response.status}`);
  if (!/^text\/plain; version=0\.0\.4/.test(response.headers.get('content-type') ?? '')) throw new Error(`unexpected content type ${response.headers.get('content-type')}`);
  return parseMetrics(await response.text());
}

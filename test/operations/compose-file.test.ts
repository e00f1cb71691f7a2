import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../src/paths.js';

// docker-compose.yml runs the API and the worker as several replicas behind a load balancer
// (docs/operations.md). `docker compose config` cannot run here; these are the rules of the
// Compose specification this file relies on, checked on the parsed YAML.

interface Service {
  build?: unknown;
  image?: string;
  command?: string[];
  healthcheck?: { test: string[] };
  deploy?: { replicas?: number };
  ports?: string[];
  expose?: string[];
  container_name?: string;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
  profiles?: string[];
}

type ComposeFile = { services: Record<string, Service>; volumes?: Record<string, unknown> };
const text = readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8');
const compose = parse(text) as ComposeFile;
const { services } = compose;
const replicated = Object.entries(services)
  .filter(([, service]) => (service.deploy?.replicas ?? 1) > 1)
  .map(([name]) => name);

/**
 * What Compose does to the file's text before reading it, for the forms the file uses:
 * `$$` is a literal `$`, `${NAME:?message}` is NAME's value or stops Compose with the message
 * when NAME is unset or empty, `${NAME}` is NAME's value.
 */
function interpolate(source: string, env: Record<string, string | undefined>): string {
  return source.replace(/\$\$|\$\{([A-Z_]+)(?::\?([^}]*)|:-([^}]*))?\}/g, (match, name?: string, message?: string, fallback?: string) => {
    if (match === '$$') return '$';
    const value = env[name!];
    if (message !== undefined && !value) throw new Error(`${name} is required: ${message}`);
    return value || (fallback ?? '');
  });
}

describe('docker-compose.yml', () => {
  it('runs the API and the worker as more than one replica', () => {
    expect(replicated.sort()).toEqual(['api', 'worker']);
    for (const name of replicated) expect(Number.isInteger(services[name]!.deploy!.replicas)).toBe(true);
  });

  it('gives replicated services no fixed host port and no container name (two replicas cannot share them)', () => {
    for (const name of replicated)
      expect({ name, ports: services[name]!.ports, container_name: services[name]!.container_name }).toEqual({ name, ports: undefined, container_name: undefined });
  });

  it('puts a load balancer in front of the API replicas, publishing the one port clients use, over TLS', () => {
    const lb = services.lb!;
    expect(lb.ports).toEqual(['3000:443']);
    expect(lb.depends_on?.api).toEqual({ condition: 'service_healthy' });
    const [source, target] = lb.volumes![0]!.split(':');
    expect(target).toBe('/etc/nginx/conf.d/default.conf');
    const config = readFileSync(path.join(PROJECT_ROOT, source!), 'utf8');
    expect(config).toMatch(/set \$api http:\/\/api:3000;/);
    expect(config).toMatch(/listen 443 ssl;/);
    expect(config).not.toMatch(/listen 80\b/);
    expect(config).toMatch(/ssl_certificate \/etc\/nginx\/tls\/cert\.pem;/);
    // The certificate is made at first start where nginx reads it, unless one is there already.
    expect(lb.volumes).toContain('./deploy/nginx-self-signed.sh:/docker-entrypoint.d/15-self-signed-certificate.sh:ro');
    expect(lb.volumes).toContain('tls:/etc/nginx/tls');
    expect(readFileSync(path.join(PROJECT_ROOT, 'deploy/nginx-self-signed.sh'), 'utf8')).toMatch(/-keyout "\$dir\/key\.pem" -out "\$dir\/cert\.pem"/);
    // So the console's cookie is __Host- and Secure, and the API reads the client's address from nginx.
    expect(services.api!.environment?.PUBLIC_URL).toBe('https://localhost:3000');
    expect(services.api!.environment?.TRUST_PROXY).toBe('uniquelocal');
    expect(config).toMatch(/proxy_set_header X-Forwarded-For \$remote_addr;/);
  });

  it('shares what several processes must share: one database, and Redis for the API replicas (their common rate limit)', () => {
    const databaseUrls = new Set(['api', 'worker'].map((name) => services[name]!.environment?.DATABASE_URL));
    expect(databaseUrls.size).toBe(1);
    expect(services.api!.environment?.REDIS_URL).toMatch(/^redis:\/\/(.*@)?redis:/);
    expect(services.api!.environment?.WORKER).toBe('off');
  });

  it('lets Prometheus scrape every API and worker replica on the compose network, never through a host port', () => {
    for (const name of ['api', 'worker']) {
      const service = services[name]!;
      expect({ name, port: service.environment?.METRICS_PORT, host: service.environment?.HOST }).toEqual({ name, port: '9464', host: '0.0.0.0' });
      expect(service.expose).toContain('9464');
    }
  });

  it('gives the API and the worker replicas one SECRETS_KEY from the environment, required (a key file per container would differ)', () => {
    const keys = new Set(['api', 'worker'].map((name) => services[name]!.environment?.SECRETS_KEY));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^\$\{SECRETS_KEY:\?.+\}$/);
  });

  it('publishes PostgreSQL and Redis on 127.0.0.1 only, each with a password from the environment that has no default', () => {
    for (const name of ['postgres', 'redis']) {
      const ports = services[name]!.ports ?? [];
      expect({ name, ports: ports.filter((port) => !port.startsWith('127.0.0.1:')) }).toEqual({ name, ports: [] });
    }
    expect(services.postgres!.environment?.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?.+\}$/);
    expect(services.redis!.environment?.REDIS_PASSWORD).toMatch(/^\$\{REDIS_PASSWORD:\?.+\}$/);
    expect(services.redis!.command!.join(' ')).toMatch(/--requirepass "\$\$REDIS_PASSWORD"/);
    expect(services.redis!.healthcheck!.test.join(' ')).toMatch(/REDISCLI_AUTH="\$\$REDIS_PASSWORD" redis-cli ping/);
  });

  it("builds the API's and the worker's URLs from those passwords, and stops without them", () => {
    const env = { SECRETS_KEY: 'key', POSTGRES_PASSWORD: 'pg0123abcd', REDIS_PASSWORD: 'rd4567efgh' };
    const { services: resolved } = parse(interpolate(text, env)) as ComposeFile;
    for (const name of ['api', 'worker']) {
      const database = new URL(resolved[name]!.environment!.DATABASE_URL!);
      expect({ name, host: database.host, user: database.username, password: database.password }).toEqual({
        name,
        host: 'postgres:5432',
        user: 'postgres',
        password: 'pg0123abcd',
      });
    }
    const redis = new URL(resolved.api!.environment!.REDIS_URL!);
    expect({ host: redis.host, user: redis.username, password: redis.password }).toEqual({ host: 'redis:6379', user: '', password: 'rd4567efgh' });
    expect(resolved.redis!.command!.at(-1)).toMatch(/--requirepass "\$REDIS_PASSWORD"$/);
    expect(text).not.toMatch(/postgres:postgres@/);
    for (const missing of Object.keys(env)) {
      expect(() => interpolate(text, { ...env, [missing]: undefined })).toThrow(new RegExp(`^${missing} is required: set ${missing}`));
    }
  });

  it('runs Jaeger under the profile tracing, receiving OTLP on the compose network, and traces nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
    const jaeger = services.jaeger!;
    expect(jaeger).toMatchObject({
      image: expect.stringMatching(/^jaegertracing\/all-in-one:\d+\.\d+\.\d+$/),
      profiles: ['tracing'],
      expose: ['4318'],
      ports: ['127.0.0.1:16686:16686'],
    });
    const env = { SECRETS_KEY: 'key', POSTGRES_PASSWORD: 'pg', REDIS_PASSWORD: 'rd' };
    for (const [setting, endpoint] of [
      [undefined, ''],
      ['http://jaeger:4318', 'http://jaeger:4318'],
    ] as const) {
      const { services: resolved } = parse(interpolate(text, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: setting })) as ComposeFile;
      for (const name of ['api', 'worker']) expect({ name, endpoint: resolved[name]!.environment!.OTEL_EXPORTER_OTLP_ENDPOINT }).toEqual({ name, endpoint });
    }
  });

  it('refers only to services, volumes and files that exist', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const dependency of Object.keys(service.depends_on ?? {})) expect({ name, dependency, exists: dependency in services }).toEqual({ name, dependency, exists: true });
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        const exists = source.startsWith('.') ? existsSync(path.join(PROJECT_ROOT, source)) : source in (compose.volumes ?? {});
        expect({ name, source, exists }).toEqual({ name, source, exists: true });
      }
    }
  });
});

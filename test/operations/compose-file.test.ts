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
  deploy?: { replicas?: number };
  ports?: string[];
  expose?: string[];
  container_name?: string;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
}

const compose = parse(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')) as { services: Record<string, Service>; volumes?: Record<string, unknown> };
const { services } = compose;
const replicated = Object.entries(services).filter(([, service]) => (service.deploy?.replicas ?? 1) > 1).map(([name]) => name);

describe('docker-compose.yml', () => {
  it('runs the API and the worker as more than one replica', () => {
    expect(replicated.sort()).toEqual(['api', 'worker']);
    for (const name of replicated) expect(Number.isInteger(services[name]!.deploy!.replicas)).toBe(true);
  });

  it('gives replicated services no fixed host port and no container name (two replicas cannot share them)', () => {
    for (const name of replicated) expect({ name, ports: services[name]!.ports, container_name: services[name]!.container_name }).toEqual({ name, ports: undefined, container_name: undefined });
  });

  it('puts a load balancer in front of the API replicas, publishing the one port clients use', () => {
    const lb = services.lb!;
    expect(lb.ports).toEqual(['3000:80']);
    expect(lb.depends_on?.api).toEqual({ condition: 'service_healthy' });
    const [source, target] = lb.volumes![0]!.split(':');
    expect(target).toBe('/etc/nginx/conf.d/default.conf');
    const config = readFileSync(path.join(PROJECT_ROOT, source!), 'utf8');
    expect(config).toMatch(/set \$api http:\/\/api:3000;/);
    expect(services.api!.environment?.PUBLIC_URL).toBe('http://localhost:3000');
  });

  it('shares what several processes must share: one database, and Redis for the API replicas (their common rate limit)', () => {
    const databaseUrls = new Set(['api', 'worker'].map((name) => services[name]!.environment?.DATABASE_URL));
    expect(databaseUrls.size).toBe(1);
    expect(services.api!.environment?.REDIS_URL).toMatch(/^redis:\/\/redis:/);
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

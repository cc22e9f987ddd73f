/**
 * Issue 42: `postgresql://…@[::1]:5432/…` failed with `getaddrinfo ENOTFOUND [::1]`: the ORM took
 * the URL's `hostname`, which keeps an IPv6 literal's brackets, and resolved it as a name. Now the
 * host is handed over without them. The machine's PostgreSQL listens on 127.0.0.1 only, so the
 * test reaches it through a TCP relay of its own on [::1].
 */
import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type Server } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostOf } from '../../db/config.js';
import { svc } from '../services.js';
import { cyborgProcess } from '../cli/spawn.js';

describe('an IPv6 literal in the database URL', () => {
  it('is the host without its brackets', () => {
    expect(hostOf('postgresql://cyborg:s3cret@[::1]:5432/cyborg')).toBe('::1');
    expect(hostOf('postgresql://cyborg@[fd00:10::5]/cyborg')).toBe('fd00:10::5');
    expect(hostOf('postgres://postgres@127.0.0.1:5432/test')).toBe('127.0.0.1');
  });
});

describe.skipIf(!svc.postgres)('cyborg db migrate on postgresql://…@[::1]:port/…', () => {
  const name = `cyborg_ipv6_${randomBytes(3).toString('hex')}`;
  let relay: Server;
  let port = 0;
  beforeAll(async () => {
    const target = new URL(svc.postgres!);
    relay = createServer((client) => {
      const server = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
      client.pipe(server).pipe(client);
      client.on('error', () => server.destroy());
      server.on('error', () => client.destroy());
    });
    await new Promise<void>((ok) => relay.listen(0, '::1', ok));
    port = (relay.address() as { port: number }).port;
  });
  afterAll(async () => {
    const c = new pg.Client({ connectionString: svc.postgres! });
    await c.connect();
    await c.query(`drop database if exists "${name}" with (force)`);
    await c.end();
    relay?.close();
  });

  it('creates and migrates the database through [::1], no ENOTFOUND', async () => {
    const user = new URL(svc.postgres!).username || 'postgres';
    const url = `postgresql://${user}@[::1]:${port}/${name}`;
    const r = await cyborgProcess(['db', 'migrate', '--create', '--database-url', url]);
    expect(r.stderr).not.toMatch(/ENOTFOUND/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^created: database "${name}"\\n`));
  });
});

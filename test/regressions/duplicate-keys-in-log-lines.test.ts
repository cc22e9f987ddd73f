/**
 * Reviewer's defect 20: the all-in-one's log lines carried a key twice. The quarantine warn line
 * read `{…,"name":"cyborg",…,"name":"<the device>",…}` (the root logger's name and the device's),
 * and a line of the conductor's document store `"component":"conductor","component":"documents"`
 * (pino's child bindings append, they never replace). Strict ingesters reject such a line, and
 * JSON.parse keeps only the last key: the on-call person lost the logger's name or the device's.
 * The device is now `accelerator`, a part of a component its `subcomponent`.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { createLogger, loadConfig } from '../../config/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { cyborg } from '../cli/harness.js';
import { eventually } from '../support/eventually.js';
import { duplicateKeys } from '../support/log.js';

describe("an all-in-one's log, as a strict ingester reads it", () => {
  const raw: string[] = [];
  let aio: Running;
  const parsed = (): Record<string, unknown>[] => raw.map((l) => JSON.parse(l) as Record<string, unknown>);

  beforeAll(async () => {
    const config = loadConfig({ host: 'dup-host', listen: { address: '127.0.0.1', port: 0 }, logLevel: 'info', logPretty: false }, {});
    // The root logger the program makes (its name, `cyborg`, included), writing here instead of stdout.
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        raw.push(...chunk.toString().split('\n').filter(Boolean));
        cb();
      },
    });
    aio = await startAllInOne(config, createLogger(config, undefined, { destination }), { journal: new MemoryJournal() });
  });
  afterAll(async () => {
    await aio.stop();
  });

  it('a device profile created and a GPU quarantined: every line has each key once, and names the device and the part', async () => {
    const created = await fetch(`${aio.url}/v2/device_profiles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-roles': 'admin', 'x-project-id': 'demo', 'x-user-id': 'ops' },
      body: JSON.stringify([{ name: 'dup-fpga', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] }]),
    });
    expect(created.status).toBe(201);
    const gpu = aio.conductor.listAccelerators({ type: 'GPU' })[0]!;
    expect(await cyborg('fake', 'fault', gpu.name, 'fatal', '--reason', 'Xid 79: fell off the bus', '--url', aio.url)).toMatchObject({ code: 0 });
    await eventually(() => parsed().some((l) => l.change === 'QUARANTINED'), { what: 'the quarantine warn line' });

    const lines = parsed();
    expect(lines.find((l) => l.change === 'QUARANTINED')).toMatchObject({
      level: 40,
      name: 'cyborg',
      component: 'conductor',
      acceleratorId: gpu.id,
      accelerator: gpu.name,
      host: 'dup-host',
      reason: expect.stringContaining('Xid 79'),
      consumers: [],
    });
    // The agent binds its host itself (the agent role's logger has none to hand it either).
    expect(lines.find((l) => l.msg === 'agent started')).toMatchObject({ name: 'cyborg', component: 'agent', host: 'dup-host' });
    expect(lines.find((l) => l.msg === 'device profile created')).toMatchObject({
      name: 'cyborg',
      component: 'conductor',
      subcomponent: 'documents',
      deviceProfileName: 'dup-fpga',
    });
    expect(raw.map((l) => ({ line: l, duplicated: duplicateKeys(l) })).filter((l) => l.duplicated.length > 0)).toEqual([]);
  });

  it('the check itself sees a key twice in the raw text, where JSON.parse keeps only the last', () => {
    const line = '{"level":40,"name":"cyborg","x":{"name":"a","v":[{"k":1,"k":2}]},"name":"gpu"}';
    expect(JSON.parse(line)).toMatchObject({ name: 'gpu' });
    expect(duplicateKeys(line)).toEqual(['k', 'name']);
    expect(duplicateKeys('{"a":"x\\",\\"a\\":1","b":{"a":2}}')).toEqual([]);
  });
});

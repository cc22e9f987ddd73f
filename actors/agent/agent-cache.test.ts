import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FakeDriver } from '../../drivers/fake/index.js';
import { AgentCache } from './agent-cache.js';

const log = pino({ level: 'silent' });
const drivers = [{ name: 'fake', version: '1.0.0' }];

describe('the agent cache', () => {
  it('counts every start, and keeps the inventory and command results across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-cache-'));
    const first = await AgentCache.open(dir, 'node-1', drivers, log);
    expect(first.epoch).toBe(0);
    const devices = await new FakeDriver({ host: 'node-1', gpus: 1, nics: 0 }).discover();
    await first.recordInventory(devices, 3);
    await first.recordCommand('k1', { ok: true, result: { bitstreamId: 'b1' } });

    const second = await AgentCache.open(dir, 'node-1', drivers, log);
    expect(second.epoch).toBe(1);
    expect(second.devices).toEqual(devices);
    expect(second.commandResult('k1')).toEqual({ ok: true, result: { bitstreamId: 'b1' } });
    expect(second.commandResult('k2')).toBeUndefined();
    expect(readdirSync(dir).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  it('sets a corrupt or foreign file aside and starts fresh', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-cache-'));
    const c = await AgentCache.open(dir, 'node-2', drivers, log);
    writeFileSync(c.path, '{"version":1,"host":"node-2","epo');
    const fresh = await AgentCache.open(dir, 'node-2', drivers, log);
    expect(fresh.epoch).toBe(0);
    expect(readdirSync(dir).some((f) => f.endsWith('.corrupt'))).toBe(true);

    writeFileSync(fresh.path, JSON.stringify({ version: 99, host: 'node-2', epoch: 7 }));
    const again = await AgentCache.open(dir, 'node-2', drivers, log);
    expect(again.epoch).toBe(0);
    expect(JSON.parse(readFileSync(again.path, 'utf8')).version).toBe(1);
  });

  it('writes one change at a time, the last one winning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-cache-'));
    const c = await AgentCache.open(dir, 'node-3', drivers, log);
    await Promise.all(Array.from({ length: 20 }, (_, i) => c.recordCommand(`k${i}`, { ok: false, code: 'driver.failed', reason: String(i) })));
    const reread = await AgentCache.open(dir, 'node-3', drivers, log);
    expect(reread.commandResult('k19')).toEqual({ ok: false, code: 'driver.failed', reason: '19' });
    expect(reread.commandResult('k0')).toBeDefined();
  });
});

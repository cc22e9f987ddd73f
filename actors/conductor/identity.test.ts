import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { acceleratorMachine } from '../../machines/index.js';
import { judgeIdentity } from './identity.js';

const recorded = { serial: 'GPU-aaaa', source: 'nvidia-smi uuid' };
const other = { serial: 'GPU-bbbb', source: 'nvidia-smi uuid' };

describe('judgeIdentity', () => {
  it('no serial read, or the recorded one: nothing changes', () => {
    expect(judgeIdentity(recorded, undefined, undefined, false)).toEqual({ kind: 'unchanged' });
    expect(judgeIdentity(undefined, undefined, undefined, true)).toEqual({ kind: 'unchanged' });
    expect(judgeIdentity(recorded, recorded, undefined, false)).toEqual({ kind: 'unchanged' });
  });
  it('a serial read from another source (nvidia-smi failing: the PCIe serial instead) is not compared', () => {
    expect(judgeIdentity(recorded, { serial: '00-11-22-ff-fe-33-44-55', source: 'pcie dsn' }, undefined, true)).toEqual({ kind: 'unchanged' });
  });
  it('a first serial is recorded', () => {
    expect(judgeIdentity(undefined, other, undefined, false)).toEqual({ kind: 'first', read: other });
  });
  it('another serial on a card that never left is a doubt, confirmed by a second read', () => {
    expect(judgeIdentity(recorded, other, undefined, false).kind).toBe('doubt');
    expect(judgeIdentity(recorded, other, other.serial, false).kind).toBe('replaced');
    expect(judgeIdentity(recorded, other, 'GPU-cccc', false).kind).toBe('doubt');
  });
  it('the recorded serial back after a doubt is a flaky tool', () => {
    expect(judgeIdentity(recorded, recorded, other.serial, false)).toEqual({ kind: 'flaky', recorded, between: other.serial });
  });
  it('another serial on a card that comes back is another card at once', () => {
    expect(judgeIdentity(recorded, other, undefined, true).kind).toBe('replaced');
  });
});

describe('REPLACED in the accelerator machine', () => {
  const start = () => createActor(acceleratorMachine, { input: { id: 'a', host: 'h', capacity: 1, identity: recorded } }).start();
  it('a quarantined, marked, enabled card replaced starts inactive with nothing but the marks', () => {
    const a = start();
    a.send({ type: 'ENABLE' });
    a.send({ type: 'OP_DONE', seq: 1 });
    a.send({ type: 'HEALTH', ok: false, severity: 'fatal', reason: 'Xid 79', at: 1 });
    a.send({ type: 'MAINTAIN', scope: 'host', at: 5 });
    expect(a.getSnapshot().context.health?.status).toBe('quarantined');
    a.send({ type: 'REPLACED', previous: recorded.serial, ...other });
    const s = a.getSnapshot();
    expect(s.value).toBe('inactive');
    expect(s.context.health).toBeUndefined();
    expect(s.context.identity).toEqual(other);
    expect(s.context.maintenance).toMatchObject({ host: true });
    expect(s.context.opSeq).toBe(1);
  });
  it('is refused while an instance holds the card', () => {
    const a = start();
    a.send({ type: 'ENABLE' });
    a.send({ type: 'OP_DONE', seq: 1 });
    a.send({ type: 'ATTACH', handleUuid: 'h1', instanceUuid: 'vm' });
    a.send({ type: 'OP_DONE', seq: 2 });
    expect(a.getSnapshot().value).toBe('attached');
    expect(a.getSnapshot().can({ type: 'REPLACED', previous: recorded.serial, ...other })).toBe(false);
  });
  it('IDENTIFIED records a first serial only', () => {
    const a = createActor(acceleratorMachine, { input: { id: 'a', host: 'h', capacity: 1 } }).start();
    a.send({ type: 'IDENTIFIED', ...recorded });
    a.send({ type: 'IDENTIFIED', ...other });
    expect(a.getSnapshot().context.identity).toEqual(recorded);
  });
});

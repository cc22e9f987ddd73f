import { describe, expect, it } from 'vitest';
import { planRejoin, recordedLayout, type HeldHandle } from './rejoin-plan.js';
import type { DeployableT, DeviceT } from '../../model/index.js';

const handle = (uuid: string): DeployableT['attachHandles'][number] => ({ uuid, attachType: 'MDEV', attachInfo: '{}', inUse: false });
const dep = (uuid: string, name: string, handles: string[], traits: string[] = []): DeployableT => ({
  uuid,
  name,
  numAccelerators: handles.length,
  driverName: 'NVIDIA',
  attributes: [{ key: 'rc', value: 'X' }, ...traits.map((t, i) => ({ key: `traits${i + 1}`, value: t }))],
  attachHandles: handles.map(handle),
});
const card = (uuid: string, bus: string, deployables: DeployableT[]): DeviceT => ({
  uuid,
  type: 'GPU',
  vendor: '10de',
  model: 'H100',
  stdBoardInfo: '{}',
  vendorBoardInfo: '{}',
  stub: false,
  controlPath: { type: 'PCI', info: JSON.stringify({ domain: '0000', bus, device: '00', function: '0' }) },
  driver: 'nvidia_gpu_driver',
  deployables,
});
const held = (acceleratorId: string, handleUuid: string): HeldHandle => ({ acceleratorId, handleUuid, instanceUuid: `vm-${handleUuid}` });

describe('the re-join plan', () => {
  const mig = card('gpu-1', '43', [dep('d-3g', 'h_0000:43:00.0_MIG_3g.40gb', ['h1']), dep('d-1g', 'h_0000:43:00.0_MIG_1g.10gb', ['h2', 'h3'])]);

  it("reads a card's recorded layout from its deployables: MIG profiles per instance, or VFs by their trait (or, on QAT, their name)", () => {
    expect(recordedLayout(mig)).toEqual({ kind: 'mig', profiles: ['1g.10gb', '1g.10gb', '3g.40gb'] });
    const nic = card('nic-1', '3b', [dep('vf0', 'h_vf0', ['v0'], ['CUSTOM_VF']), dep('vf1', 'h_vf1', ['v1'], ['CUSTOM_VF'])]);
    expect(recordedLayout(nic)).toEqual({ kind: 'vf', count: 2 });
    expect(recordedLayout(card('gpu-2', '17', [dep('p', 'h_0000:17:00.0', ['x'])]))).toBeUndefined();
    // Cyborg's QAT driver gives its VFs no trait: every deployable but the PF's own is one.
    const qat = (deps: DeployableT[]): DeviceT => ({ ...card('qat-1', '3d', deps), type: 'QAT' });
    expect(recordedLayout(qat([dep('q0', 'h_0000:3d:01.0', ['a']), dep('q1', 'h_0000:3d:01.1', ['b'])]))).toEqual({ kind: 'vf', count: 2 });
    expect(recordedLayout(qat([dep('pf', 'h_0000:3d:00.0', ['c'])]))).toBeUndefined();
  });

  it('restores only held handles observed absent; a handle of a deployable nobody looked at is left alone', () => {
    const devices = [card('gpu-2', '17', [dep('p', 'h_0000:17:00.0', ['x', 'y']), dep('q', 'h_q', ['z'])])];
    const steps = planRejoin({
      held: [held('p', 'x'), held('p', 'y'), held('q', 'z')],
      recorded: devices,
      devices,
      observed: { deployables: ['p'], present: ['y'], cards: [] },
    });
    expect(steps).toEqual([{ kind: 'restore', held: held('p', 'x') }]);
  });

  it('applies a lost MIG layout again once per card for every held deployable it carried, before anything else', () => {
    const rebooted = card('gpu-1', '43', []);
    const steps = planRejoin({
      held: [held('d-1g', 'h2'), held('d-3g', 'h1')],
      recorded: [mig],
      devices: [rebooted],
      observed: { deployables: [], present: [], cards: [{ deviceUuid: 'gpu-1', migLayout: [] }] },
    });
    expect(steps).toEqual([
      {
        kind: 'relayout',
        deviceUuid: 'gpu-1',
        address: '0000:43:00.0',
        driver: 'nvidia_gpu_driver',
        layout: { kind: 'mig', profiles: ['1g.10gb', '1g.10gb', '3g.40gb'] },
        held: [held('d-1g', 'h2'), held('d-3g', 'h1')],
      },
    ]);
  });

  it('flags a device gone from the host, a card whose layout is as recorded, and a handle the device no longer has', () => {
    const other = card('gpu-2', '17', [dep('p', 'h_p', ['x2'])]);
    const steps = planRejoin({
      held: [held('d-3g', 'h1'), held('p', 'x'), held('gone', 'g')],
      recorded: [mig, other, card('gpu-9', '99', [dep('gone', 'h_gone', ['g'])])],
      devices: [card('gpu-1', '43', [dep('d-1g', 'h_0000:43:00.0_MIG_1g.10gb', ['h2', 'h3'])]), other],
      // The card says it has its recorded layout: re-applying it would change nothing.
      observed: { deployables: ['p', 'd-1g'], present: [], cards: [{ deviceUuid: 'gpu-1', migLayout: ['3g.40gb', '1g.10gb', '1g.10gb'] }] },
    });
    expect(steps.map((st) => [st.kind, st.kind === 'relayout' ? st.deviceUuid : st.held.acceleratorId])).toEqual([
      ['flag', 'd-3g'],
      ['flag', 'p'],
      ['flag', 'gone'],
    ]);
    expect(steps[1]).toMatchObject({ reason: expect.stringMatching(/attach handle x of instance vm-x is no longer on the device/) });
  });

  it('adopts what running guests hold and no record does, after everything else; flags a handle a record gives to another instance', () => {
    const devices = [card('gpu-2', '17', [dep('p', 'h_p', ['x', 'y', 'z'])])];
    const steps = planRejoin({
      held: [held('p', 'x'), held('p', 'y')],
      recorded: devices,
      devices,
      observed: {
        deployables: ['p'],
        present: ['x', 'y', 'z'],
        cards: [],
        guests: [
          { deployableUuid: 'p', handleUuid: 'x', instanceUuid: 'vm-x' },
          { deployableUuid: 'p', handleUuid: 'y', instanceUuid: 'vm-other' },
          { deployableUuid: 'p', handleUuid: 'z', instanceUuid: 'vm-z' },
          { deployableUuid: 'p', handleUuid: 'not-on-the-device', instanceUuid: 'vm-w' },
        ],
      },
    });
    expect(steps).toEqual([
      {
        kind: 'flag',
        held: held('p', 'y'),
        reason: "attach handle y is recorded for instance vm-y, but the host's running guest of instance vm-other holds it",
      },
      { kind: 'adopt', held: { acceleratorId: 'p', handleUuid: 'z', instanceUuid: 'vm-z' } },
    ]);
  });
});

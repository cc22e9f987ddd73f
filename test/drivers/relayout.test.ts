import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntelNicDriver } from '../../drivers/nic/index.js';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import { buildHost, NIC_HOST, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { startStack, type Stack } from '../support/stack.js';

const fixtures = fileURLToPath(new URL('../fixtures/vendors/', import.meta.url));
const ADMIN = { 'x-auth-token': 'notused' };

/**
 * An operator re-lays out cards through the operator API: the H100's MIG instances and the X710's
 * VF count. The driver applies it, the agent reports the card anew, the audit says who did it;
 * an attached device, a layout the card cannot take and a card nobody has are clear refusals.
 */
describe('POST /cyborg/v1/hosts/{host}/layout (MIG on an H100, VFs on an X710)', () => {
  let rt: Stack;
  let smi: string;
  let nicRoot: string;

  beforeAll(async () => {
    smi = join(mkdtempSync(join(tmpdir(), 'cyborg-relayout-smi-')), 'h100');
    cpSync(join(fixtures, 'nvidia-smi', 'h100'), smi, { recursive: true });
    const gpuRoot = buildHost(NVIDIA_HOST, 'relayout-gpu');
    nicRoot = buildHost(NIC_HOST, 'relayout-nic');
    const state = mkdtempSync(join(tmpdir(), 'cyborg-relayout-state-'));
    rt = await startStack({
      hosts: ['gpu-1', 'nic-1'],
      api: true,
      drivers: (host) =>
        host === 'gpu-1'
          ? [
              new NvidiaGpuDriver({
                host,
                sysfsRoot: gpuRoot,
                nvidiaSmi: ['sh', join(fixtures, 'bin', 'fake-nvidia-smi.sh'), smi],
                stateDir: join(state, host),
              }),
            ]
          : [new IntelNicDriver({ host, sysfsRoot: nicRoot, stateDir: join(state, host) })],
    });
  });
  afterAll(async () => {
    await rt?.stop();
  });

  const layout = (host: string, body: unknown) =>
    rt.app!.inject({
      method: 'POST',
      url: `/cyborg/v1/hosts/${host}/layout`,
      headers: { ...ADMIN, 'x-request-id': 'req-relayout-1' },
      payload: body as object,
    });

  it('applies a MIG layout through nvidia-smi and logs who asked', async () => {
    const res = await layout('gpu-1', { kind: 'mig', address: '0000:1b:00.0', profiles: ['1g.20gb', '1g.20gb', '1g.20gb', '1g.20gb'] });
    expect(res.statusCode).toBe(200);
    expect(readFileSync(join(smi, 'calls.log'), 'utf8')).toContain('mig -i 0 -cgi 15,15,15,15 -C');
    const audit = (await rt.conductor.history('gpu-1')).find((r) => r.event === 'APPLY_MIG_LAYOUT');
    expect(audit).toMatchObject({ kind: 'host', args: { address: '0000:1b:00.0', profiles: '1g.20gb,1g.20gb,1g.20gb,1g.20gb' } });
  });

  it("refuses a layout the card cannot take with the driver's reason, and bad input with 400", async () => {
    const res = await layout('gpu-1', { kind: 'mig', address: '0000:1b:00.0', profiles: ['7g.80gb', '7g.80gb'] });
    expect(res.statusCode).toBe(502);
    expect(res.json().message).toMatch(/at most 1/);
    expect((await layout('gpu-1', { kind: 'mig', address: 'not-an-address', profiles: ['1g.10gb'] })).statusCode).toBe(400);
    expect((await layout('gpu-1', { kind: 'vfs', address: '0000:1b:00.0', count: 100_000 })).statusCode).toBe(400);
    // Each refusal names the field that is wrong for the kind asked, not one of the other kind's.
    const refusal = async (body: object) => (await layout('nic-1', body)).json();
    expect(await refusal({ kind: 'vfs', address: '0000:3b:00.0', count: -1 })).toMatchObject({ field: 'body/count', message: 'body/count must be >= 0' });
    expect(await refusal({ kind: 'vfs', address: '0000:3b:00.0', count: 'x' })).toMatchObject({ field: 'body/count' });
    expect(await refusal({ kind: 'vfs', address: '0000:3b:00.0' })).toMatchObject({ field: 'body/count', message: 'body/count is required' });
    expect(await refusal({ kind: 'mig', address: '0000:3b:00.0', count: 4 })).toMatchObject({ field: 'body/profiles' });
    expect(await refusal({ kind: 'bogus' })).toMatchObject({ field: 'body/kind', message: 'body/kind must be one of: mig, vfs' });
    expect(await refusal({})).toMatchObject({ field: 'body/kind', message: 'body/kind is required' });
    expect(await refusal({ kind: 'vfs', address: '0000:3b:00.0', count: 4, force: true })).toMatchObject({ field: 'body/force' });
    expect((await layout('nowhere', { kind: 'vfs', address: '0000:3b:00.0', count: 4 })).statusCode).toBe(404);
    expect((await layout('nic-1', { kind: 'vfs', address: '0000:99:00.0', count: 4 })).statusCode).toBe(404);
  });

  it('sets a VF count, and refuses it while a VF of the card is attached, naming the instance', async () => {
    const vf = rt.conductor.listAccelerators({ host: 'nic-1' }).find((a) => a.traits.includes('CUSTOM_VF'))!;
    await rt.conductor.act(vf.id, { type: 'ENABLE' });
    await rt.conductor.attach(vf.id, { instanceUuid: 'vm-nic', projectId: 'p1' });
    const refused = await layout('nic-1', { kind: 'vfs', address: '0000:3b:00.0', count: 8 });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'accelerator.allocated' });
    expect(refused.json().message).toContain('vm-nic');
    await rt.conductor.detach(vf.id, { instanceUuid: 'vm-nic' });
    const res = await layout('nic-1', { kind: 'vfs', address: '0000:3b:00.0', count: 8 });
    expect(res.statusCode).toBe(200);
    expect(readFileSync(join(nicRoot, 'bus/pci/devices/0000:3b:00.0/sriov_numvfs'), 'utf8')).toBe('8');
  });
});

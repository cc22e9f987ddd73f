import { afterEach, describe, expect, it } from 'vitest';
import { Subjects } from '../../bus/subjects.js';
import { BusError } from '../../errors/index.js';
import { resendEveryMs } from '../../actors/conductor/index.js';
import { type Stack, startStack } from '../support/stack.js';

let rt: Stack | undefined;
afterEach(async () => {
  await rt?.stop();
  rt = undefined;
});

describe('driver commands whose answer is lost on the way', () => {
  it('are re-sent with the same idempotency key: the driver runs once and the accelerator gets ready', async () => {
    rt = await startStack({ timing: { driverOpTimeoutMs: 3_000 } });
    const bus = rt.bus;
    const request = bus.request.bind(bus);
    const lost: string[] = [];
    // The first answer to each command never reaches the conductor (a NATS reconnect ate it):
    // the agent did run the command, the conductor's request just times out.
    bus.request = (async (subject, reqSchema, repSchema, msg, opts) => {
      const key = (msg as { idempotencyKey?: string }).idempotencyKey;
      if (subject === Subjects.command('compute-1') && key && !lost.includes(key)) {
        lost.push(key);
        void request(subject, reqSchema, repSchema, msg, opts).catch(() => undefined);
        await new Promise((r) => setTimeout(r, opts.timeoutMs));
        throw new BusError('bus.timeout', `no reply on ${subject} within ${opts.timeoutMs} ms`, { subject });
      }
      return request(subject, reqSchema, repSchema, msg, opts);
    }) as typeof bus.request;

    const fpga = rt.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    const enabled = await rt.conductor.act(fpga.id, { type: 'ENABLE' });
    expect(enabled.state).toBe('ready');
    expect(lost).toHaveLength(1);
    expect(rt.fakes[0]!.calls.filter((c) => c.op === 'install')).toHaveLength(1);
    expect(rt.lines.filter((l) => l.msg === 'no answer to a driver command yet: re-sending it with the same idempotency key')).toHaveLength(1);
    expect(rt.lines.find((l) => l.msg === 'driver command answered after a re-send')).toMatchObject({ acceleratorId: fpga.id, op: 'install', attempts: 2 });
  });

  it('re-sends a third of the deadline apart, at most every 5 s', () => {
    expect(resendEveryMs(30_000)).toBe(5_000);
    expect(resendEveryMs(3_000)).toBe(1_000);
    expect(resendEveryMs(1)).toBe(1);
  });
});

/**
 * Regression (found by the rolling-upgrade story on a loaded machine, issue 41): an operator's
 * disable reached a conductor that had just taken the card's host over and was still rebuilding
 * it; the api's wait (5 s) ran out first and it answered 503 — and then the conductor made the
 * disable. The operator's retry met 409 `inactive`. A 503 must mean "not done".
 *
 * Now an operator's accelerator write carries its caller's wait as ARQ writes do (`budgetMs`,
 * control/deadline.ts): a call whose deadline passed before it could be served is refused before
 * anything of it is done (no driver command goes out), what it would commit late is refused by
 * the journal, and the api, having heard nothing in time, answers `request.outcome_unknown` (504:
 * read it back), never 503. In-process bus and a fake agent: the seam is the responder's.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RemoteControlPlane } from '../../control/client.js';
import { serveControlPlane, ViewPublisher } from '../../control/responder.js';
import { AcceleratorStates } from '../../machines/index.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';

const API_WAIT_MS = 800;

describe("an operator's write that reaches a conductor still rebuilding the card's host", () => {
  let stack: Stack;
  let stop: () => void;
  let publisher: ViewPublisher;
  let api: RemoteControlPlane;
  let rebuildMs = 0;

  beforeEach(async () => {
    stack = await startStack({ log: quietLogger() });
    const fpga = stack.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    await stack.conductor.act(fpga.id, { type: 'ENABLE' });
    publisher = new ViewPublisher(stack.bus, stack.conductor, 'c1');
    stop = serveControlPlane({
      bus: stack.bus,
      conductor: stack.conductor,
      conductorId: 'c1',
      publisher,
      timeoutMs: 5_000,
      log: quietLogger(),
      // The host was just taken over: its rebuild takes `rebuildMs`.
      settled: () => new Promise((r) => setTimeout(r, rebuildMs)),
    });
    api = new RemoteControlPlane(stack.bus, quietLogger(), API_WAIT_MS);
    await api.start();
  });
  afterEach(async () => {
    api.stop();
    stop();
    publisher.stop();
    await stack.stop();
  });

  const fpga = (): { id: string; state: string } => stack.conductor.listAccelerators({ type: 'FPGA' })[0]!;

  it('is answered "outcome unknown" (504), never 503, and is not made after the api answered', async () => {
    rebuildMs = API_WAIT_MS + 400;
    const { id } = fpga();
    const uninstallsBefore = stack.fakes[0]!.calls.length;
    const err = await api.act(id, { type: 'DISABLE' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'request.outcome_unknown', status: 504 });
    // Past the rebuild: the conductor refused the call once it could serve it, and did nothing of it.
    await new Promise((r) => setTimeout(r, rebuildMs));
    expect(fpga().state).toBe(AcceleratorStates.ready);
    expect(stack.fakes[0]!.calls.length).toBe(uninstallsBefore);
    // Read back, as the 504 asks, and sent again: it is made.
    rebuildMs = 0;
    await expect(api.act(id, { type: 'DISABLE' })).resolves.toMatchObject({ state: AcceleratorStates.inactive });
  });

  it('is made as usual when the rebuild ends within its deadline', async () => {
    rebuildMs = 100;
    await expect(api.act(fpga().id, { type: 'DISABLE' })).resolves.toMatchObject({ state: AcceleratorStates.inactive });
  });
});

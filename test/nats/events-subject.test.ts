/**
 * `cyborg.events.<kind>` is the conductor's public feed (docs/distributed.md: "conductor →
 * anyone, after each commit"): an outside subscriber — a notifier, an audit pipe — reads each
 * committed transition there, in the schema model/events.ts declares, and the same transition
 * that the views message carries to the apis. The conductor writes each transition's JSON once
 * and sends that text on both, so the two must agree field for field.
 */
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type NatsBus } from '../../bus/nats.js';
import { Subjects } from '../../bus/subjects.js';
import type { ViewsBatchMsg } from '../../control/messages.js';
import { TransitionEvent, type CommittedEvent } from '../../model/index.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { Deployment } from './deployment.js';
import { natsServerInstalled, PrivateNats } from './helpers.js';
import { firstError } from '../../bus/schemas.js';

describe.skipIf(!natsServerInstalled)('the public event feed, cyborg.events.<kind>', { timeout: 300_000 }, () => {
  let nats: PrivateNats;
  let dep: Deployment;
  let outsider: NatsBus;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    dep = new Deployment(nats.url);
  }, 60_000);
  afterAll(async () => {
    await outsider?.close();
    await dep?.stop();
    await nats?.stop();
  });

  it("an outside subscriber reads each committed transition in the feed's schema, as the views message carries it", async () => {
    dep.logsOnFailure();
    // Subscribed before anything starts: the agent's registration and discovery are transitions too.
    outsider = await connectBus({ url: nats.url, name: 'outside-subscriber', log: quietLogger(), prefix: dep.prefix });
    const fed: { subject: string; ev: CommittedEvent }[] = [];
    const invalid: string[] = [];
    outsider.subscribe(Subjects.eventsAll, Type.Unknown(), (m, subject) => {
      const err = firstError(TransitionEvent, m);
      if (err) invalid.push(`${subject}: ${err}`);
      else fed.push({ subject, ev: m as CommittedEvent });
    });
    const carried: CommittedEvent[] = [];
    outsider.subscribe(Subjects.views, Type.Unknown(), (m) => void carried.push(...(m as ViewsBatchMsg).transitions));

    await dep.conductor('conductor-ev');
    await dep.agent('node-ev', { CYBORG_ENABLED_DRIVERS: 'fake_driver' });
    const client = await dep.api();
    const fpga = await eventually(() => client.listAccelerators({ host: 'node-ev', type: 'FPGA' })[0], { what: "node-ev's FPGA" });
    await client.act(fpga.id, { type: 'ENABLE' });

    const enabled = (e: CommittedEvent): boolean => e.kind === 'accelerator' && e.id === fpga.id && e.event === 'ENABLE';
    await eventually(() => fed.some((f) => enabled(f.ev)) && carried.some(enabled), { what: "the FPGA's ENABLE on the feed and in the views" });
    expect(invalid).toEqual([]);
    // Each on its kind's subject (an accelerator's on `transition`, as it always was).
    for (const f of fed) expect(f.subject).toBe(Subjects.event(f.ev.kind === 'accelerator' ? 'transition' : (f.ev.kind as 'host' | 'arq' | 'driver')));
    expect(fed.filter((f) => f.ev.kind === 'accelerator').length).toBeGreaterThan(1); // discovered, then enabled
    // The same transitions, field for field, on both (by their sequence number).
    await eventually(() => carried.length >= fed.length, { what: 'the views to carry every transition fed' });
    const bySeq = new Map(carried.map((e) => [`${e.kind}:${e.seq}`, e]));
    for (const f of fed) expect(bySeq.get(`${f.ev.kind}:${f.ev.seq}`)).toEqual(f.ev);
  });
});

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { CyborgError } from '../../errors/index.js';
import type { ControlPlane } from '../../model/index.js';
import { policy } from '../auth/index.js';
import { ErrorSchema, Uuid } from './shared.js';

/** What can be scripted on a fake device: the fake driver's health faults, or none any more. */
export const FAULTS = ['transient', 'fatal', 'flapping', 'clear'] as const;
export type FaultKind = (typeof FAULTS)[number];

/** Hands a fault to the fake driver that reports the device (roles/fake-faults.ts). */
export interface FaultInjector {
  /** The fake driver's name: only its devices take a fault. */
  readonly driver: string;
  inject(host: string, deployableUuid: string, fault: FaultKind, reason: string): Promise<void>;
}

const Body = Type.Object(
  {
    fault: Type.Union(
      FAULTS.map((f) => Type.Literal(f)),
      { description: 'transient and fatal answer unhealthy at every check, flapping every other one; clear ends it' },
    ),
    reason: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'what the driver says (e.g. "Xid 79: GPU has fallen off the bus"); default: "injected <fault> fault"',
      }),
    ),
  },
  { additionalProperties: false },
);

const Injected = Type.Object({
  accelerator: Type.String(),
  host: Type.String(),
  fault: Type.String(),
  reason: Type.String(),
  note: Type.String(),
});

/**
 * `POST /cyborg/v1/accelerators/{id}/fake-fault`: a scripted health fault on a fake device, for
 * demos and rehearsals (docs/metrics.md). Registered only where the fake driver runs in this
 * process (the all-in-one with `fake_driver` enabled): elsewhere the route does not exist. A
 * device of any other driver is refused (400 `fault.not_fake_driver`) and nothing is touched.
 * The device's health moves as the conductor judges the agent's next checks, exactly as a real
 * fault would (one is run at once).
 */
export const fakeFaultRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane; injector: FaultInjector }> = async (app, { control, injector }) => {
  app.post(
    '/accelerators/:id/fake-fault',
    {
      onRequest: policy('cyborg:operator:fake:fault'),
      schema: {
        tags: ['operator'],
        summary: "Inject (or clear) a health fault on a fake driver's device: demos and rehearsals only",
        params: Type.Object({ id: Uuid }),
        body: Body,
        response: { 200: Injected, 400: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (req) => {
      const view = control.getAccelerator(req.params.id);
      if (view.driver !== injector.driver) {
        throw new CyborgError(
          'fault.not_fake_driver',
          `accelerator ${view.id} is driven by ${view.driver}, not the fake driver: faults are injected into fake devices only (field: id)`,
          { id: view.id, field: 'id', driver: view.driver },
        );
      }
      const body = req.body as Static<typeof Body>;
      const reason = body.reason ?? `injected ${body.fault} fault`;
      await injector.inject(view.host, view.id, body.fault, reason);
      req.log.warn({ acceleratorId: view.id, host: view.host, fault: body.fault, reason, actor: req.identity?.userId }, 'fake fault injected');
      return {
        accelerator: view.id,
        host: view.host,
        fault: body.fault,
        reason,
        note:
          body.fault === 'clear'
            ? 'the next healthy checks bring it back ([conductor] health_leave_after); a fatal one needs reset or clear-health'
            : "judged from the agent's health checks: fatal quarantines at once, transient after [conductor] health_enter_after checks",
      };
    },
  );
};

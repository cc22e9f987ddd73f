import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CyborgError } from '../../errors/index.js';
import type { ControlPlane } from '../../model/index.js';
import { policy } from '../auth/index.js';
import { AcceleratorSchema, meta } from './accelerators.js';
import { ErrorSchema, Uuid } from './shared.js';
import { AcceleratorStates } from '../../machines/index.js';

const Body = Type.Object({ instanceUuid: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false });

/**
 * `POST /cyborg/v1/accelerators/{id}/release {instanceUuid}`: the end of a card that died under an
 * instance, or one on a host that is lost. Its detach failed (the accelerator is in `error`
 * holding the instance) or cannot run (`offline`), so the
 * operator lets the instance go in Cyborg's records without the driver: the handle is free, an
 * ARQ waiting to unbind it completes, a `Bound` ARQ becomes `BindFailed` (`released: …`), as Nova
 * reads a failed bind, and the card stays in `error` — flagged, bound to nothing
 * new — until it is retried, reset or removed (`remove` is allowed once nothing holds it).
 * Audited as a `RELEASE` row with who asked.
 */
export const releaseRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.post(
    '/accelerators/:id/release',
    {
      onRequest: policy('cyborg:operator:accelerator:release'),
      schema: {
        tags: ['operator'],
        summary: 'Release an instance from a card whose detach failed, without the driver (the card stays in error)',
        params: Type.Object({ id: Uuid }),
        body: Body,
        response: { 200: AcceleratorSchema, 400: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req) => {
      const view = control.getAccelerator(req.params.id);
      const { instanceUuid } = req.body;
      if (!view.allocations.some((a) => a.instanceUuid === instanceUuid)) {
        const on = view.allocations.map((a) => a.instanceUuid);
        throw new CyborgError(
          'request.invalid',
          `instanceUuid ${instanceUuid} is not on accelerator ${view.name} (${on.length ? `on it: ${on.join(', ')}` : 'nothing holds it'}); nothing was changed`,
          { field: 'instanceUuid', id: view.id, instances: on },
        );
      }
      if (view.state !== AcceleratorStates.error && view.state !== AcceleratorStates.offline) {
        throw new CyborgError(
          'accelerator.transition_invalid',
          `release is for a card whose detach failed or whose host is lost; accelerator ${view.name} is ${view.state}: detach the instance instead (cyborg accelerator detach ${view.name} --instance ${instanceUuid})`,
          { id: view.id, event: 'RELEASE', state: view.state, allowed: view.allowed },
        );
      }
      return control.act(view.id, { type: 'RELEASE', instanceUuid }, meta(req));
    },
  );
};

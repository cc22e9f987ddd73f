import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { acceleratorMachine, ARQ_EVENTS, arqMachine, hostMachine, OPERATOR_EVENTS } from '../../machines/index.js';
import { machineGraph } from '../../machines/index.js';
import { policy } from '../auth/index.js';

/** Where `vite build` puts the page (ui/vite.config.ts); `npm start` builds it when stale. */
export const UI_DIST = fileURLToPath(new URL('../../ui/dist/', import.meta.url));

const Graph = Type.Object({
  id: Type.String(),
  initial: Type.Union([Type.String(), Type.Null()]),
  states: Type.Array(
    Type.Object({
      id: Type.String(),
      type: Type.String(),
      tags: Type.Array(Type.String()),
      transient: Type.Boolean(),
      invokes: Type.Array(Type.String()),
    }),
  ),
  transitions: Type.Array(
    Type.Object({ from: Type.String(), to: Type.String(), event: Type.String(), guard: Type.Optional(Type.String()), operator: Type.Boolean() }),
  ),
});

/**
 * The machine definitions the page draws its statecharts from, walked from the running machines
 * themselves (so a new state or transition shows up without touching the page), under the
 * operator prefix.
 */
export const machineRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const graphs = { accelerator: machineGraph(acceleratorMachine, OPERATOR_EVENTS), arq: machineGraph(arqMachine, ARQ_EVENTS), host: machineGraph(hostMachine) };
  app.get(
    '/machines',
    {
      onRequest: policy('cyborg:operator:machine:get'),
      schema: {
        tags: ['operator'],
        summary: 'The accelerator, ARQ and host state machines as graphs (states, transitions, guards)',
        response: { 200: Type.Object({ accelerator: Graph, arq: Graph, host: Graph }) },
      },
    },
    async () => graphs,
  );
};

export interface UiOptions {
  /** The built page; defaults to ui/dist. */
  root?: string;
}

/** Serves the built visualizer at `/ui/`; says how to build it when it has not been built. */
export const uiRoutes: FastifyPluginAsyncTypebox<UiOptions> = async (app, opts) => {
  const root = opts.root ?? UI_DIST;
  app.get('/ui', async (_req, reply) => reply.redirect('/ui/'));
  if (!existsSync(root)) {
    app.get('/ui/*', async (_req, reply) =>
      reply.status(503).type('text/plain').send('The visualizer is not built: run `npm run build:ui` (npm start does it for you).\n'),
    );
    return;
  }
  // decorateReply false: another plugin (swagger-ui) may register @fastify/static too.
  await app.register(fastifyStatic, { root, prefix: '/ui/', decorateReply: false, index: 'index.html', cacheControl: true, maxAge: 0 });
};

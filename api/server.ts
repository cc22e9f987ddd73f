import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerFactory } from 'fastify';
import { Ajv } from 'ajv';
import type { Logger } from 'pino';
import { MAX } from './bounds.js';
import { installErrorHandler } from './errors.js';
import { registerOpenApi } from './openapi.js';
import { authSettings, registerCyborgV2, type V2Settings } from './v2/index.js';
import { BrowserSessions, installAuth, installBrowserSessions, installRequestIds, requestId, type ApiAuth } from './auth/index.js';
import { compileTrust } from './v2/links.js';
import { acceleratorRoutes } from './routes/accelerators.js';
import { healthRoutes, type HealthOptions } from './routes/health.js';
import { hostRoutes } from './routes/hosts.js';
import { maintenanceRoutes } from './routes/maintenance.js';
import { auditRoutes } from './routes/audit.js';
import { usageRoutes } from './routes/usage.js';
import { layoutRoutes } from './routes/layout.js';
import { authRoutes } from './routes/auth.js';
import { installNames } from './names.js';
import { sessionRoutes } from './routes/session.js';
import { eventRoutes, EventStreams } from './routes/events.js';
import { apiLimits, type ApiLimits } from './limits.js';
import { limitOperatorWrites } from './rate-limit.js';
import { machineRoutes, uiRoutes } from './routes/ui.js';
import { genericDriverRoutes } from './routes/drivers.js';
import { capacityRoutes } from './routes/capacity.js';
import { releaseRoutes } from './routes/release.js';
import { hostDeleteRoutes, type HostRetirer } from './routes/host-delete.js';
import { fakeFaultRoutes, type FaultInjector } from './routes/fake-faults.js';
import { absentBodyAsEmpty } from './routes/shared.js';
import type { ControlPlane } from '../model/index.js';

export interface ApiOptions {
  control: ControlPlane;
  log: Logger;
  health?: HealthOptions;
  /** Cyborg v2 API settings (config `v2`): identity strategy, policy, service token, link base. */
  v2?: V2Settings;
  /** Keystone token validation and the policy in force (api/auth/setup.ts); noauth and Cyborg's default rules without. */
  auth?: ApiAuth;
  /** What one client may cost (config `api`); the schema's defaults where not given. */
  limits?: Partial<ApiLimits>;
  /** `DELETE /hosts/{name}`, where this process can retire a host (the all-in-one, the api role). */
  hostRetirer?: HostRetirer;
  /** `POST /accelerators/{id}/fake-fault`, where a fake driver runs in this process. */
  faultInjector?: FaultInjector;
  /** A listener bound before the app was built (roles/early-listener.ts): the app serves there, with no `listen` of its own. */
  serverFactory?: FastifyServerFactory;
}

/** This project's own routes live under this prefix; Cyborg's v2 API keeps `/` and `/v2`. */
export const OPERATOR_PREFIX = '/cyborg/v1';

/** Builds the HTTP application (not listening): the all-in-one and the api role both use it. */
export async function buildApi(opts: ApiOptions): Promise<FastifyInstance> {
  // One trust list for Fastify's X-Forwarded-Proto / -Host / -For and the v2 links' -Prefix.
  const trust = compileTrust(opts.v2?.trustedProxies ?? []);
  const app = Fastify({
    ...(trust ? { trustProxy: trust } : {}),
    ...(opts.serverFactory ? { serverFactory: opts.serverFactory } : {}),
    loggerInstance: opts.log.child({ component: 'api' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestId,
    // A request that arrives on a kept-alive connection while the role drains (a restart) is
    // served, not answered a bare 503 (no Retry-After): the control plane is still up until the
    // listener has closed (roles/api.ts closes it first), and Nova's client does not retry that.
    return503OnClosing: false,
    // Path parameters as long as the longest the schemas allow (a comma list of ARQ uuids), so an
    // overlong one is the schema's 400 naming it rather than the router's bare 414.
    routerOptions: { maxParamLength: MAX.list },
  });
  // No type provider here: the root declares no route. Each route plugin is a
  // FastifyPluginAsyncTypebox that types its own scope, so the installers below take the plain
  // FastifyInstance they decorate, with no cast.
  // Query strings and path parameters are text, coerced to the schema's numbers (and a single value
  // to a list). A JSON body has types of its own: a number where a string belongs is a 400, not "42".
  const ajvOptions = { removeAdditional: false, useDefaults: true, allErrors: false } as const;
  const coercing = new Ajv({ ...ajvOptions, coerceTypes: 'array' });
  const exact = new Ajv({ ...ajvOptions, coerceTypes: false });
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? exact : coercing).compile(schema));
  installErrorHandler(app, opts.control.unseen?.bind(opts.control));
  installRequestIds(app);
  const auth = authSettings({ ...opts.v2, ...opts.auth });
  installAuth(app, auth);
  installNames(app, auth);
  await registerOpenApi(app);
  // One line per request; writes at info (they change state), reads at debug (they are many).
  app.addHook('onResponse', async (req, reply) => {
    const level = req.method === 'GET' || req.method === 'HEAD' ? 'debug' : 'info';
    req.log[level]({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  const limits = apiLimits(opts.limits);
  const streams = new EventStreams();
  app.decorate('eventStreams', streams);
  await app.register(healthRoutes, opts.health ?? {});
  await app.register(
    async (scope) => {
      await limitOperatorWrites(scope, limits.operatorRateLimit);
      absentBodyAsEmpty(scope);
      // The visualizer's session cookie stands in for X-Auth-Token on every operator route (before them all).
      const sessions = new BrowserSessions();
      installBrowserSessions(scope, sessions);
      await scope.register(authRoutes);
      await scope.register(sessionRoutes, { sessions });
      await scope.register(hostRoutes, { control: opts.control, pageMax: limits.pageMax });
      await scope.register(acceleratorRoutes, { control: opts.control, pageMax: limits.pageMax });
      await scope.register(maintenanceRoutes, { control: opts.control });
      await scope.register(auditRoutes, { control: opts.control, pageMax: limits.pageMax });
      await scope.register(usageRoutes, { control: opts.control });
      await scope.register(capacityRoutes, { control: opts.control });
      await scope.register(releaseRoutes, { control: opts.control });
      await scope.register(layoutRoutes, { control: opts.control });
      await scope.register(eventRoutes, { control: opts.control, streams, maxClients: limits.sseMaxClients, bufferBytes: limits.sseBufferBytes });
      await scope.register(machineRoutes);
      // Drivers per host, services, instance attach (generic-driver spec): where the control plane offers them.
      if (opts.control.driverAdmin) await scope.register(genericDriverRoutes, { admin: opts.control.driverAdmin, pageMax: limits.pageMax });
      // Inside this scope, not added by the role afterwards: a write outside it escapes the rate limit.
      if (opts.hostRetirer) await scope.register(hostDeleteRoutes, { retirer: opts.hostRetirer });
      if (opts.faultInjector) await scope.register(fakeFaultRoutes, { control: opts.control, injector: opts.faultInjector });
    },
    { prefix: OPERATOR_PREFIX },
  );
  await app.register(uiRoutes);
  await registerCyborgV2(app, { control: opts.control, settings: { ...opts.v2, ...opts.auth }, trust, limits });
  return app;
}

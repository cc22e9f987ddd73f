import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { arqRoutes } from './accelerator-requests.js';
import { attributeRoutes } from './attributes.js';
import { Catalogue } from './catalogue.js';
import type { V2Deps } from './context.js';
import { deployableRoutes } from './deployables.js';
import { deviceProfileRoutes } from './device-profiles.js';
import { deviceRoutes } from './devices.js';
import { identityHeaderProblem } from '../bounds.js';
import { installLenientJson, installV2ErrorHandler, v2Error } from './errors.js';
import { identify, type AuthSettings, type KeystoneAuth } from '../auth/index.js';
import type { Enforcer } from '../../policy/index.js';
import { microversionHook } from './microversion.js';
import { MOUNTS, type LinkSettings, type TrustFn } from './links.js';
import { rootRoutes, v2DocRoutes } from './versions.js';
import type { ControlPlane } from '../../model/index.js';
import { apiLimits, type ApiLimits } from '../limits.js';

/** The v2 part of the configuration (config `v2`). */
export interface V2Settings {
  authStrategy?: 'noauth' | 'keystone';
  serviceTokenRequired?: boolean;
  serviceTokenRoles?: readonly string[];
  enforceNewDefaults?: boolean;
  publicEndpoint?: string;
  /** Peers whose `X-Forwarded-Proto` / `-Host` / `-Prefix` are believed (addresses, CIDRs, `loopback`). */
  trustedProxies?: readonly string[];
  /** Keystone mode's token validator (api/auth/setup.ts). */
  keystone?: KeystoneAuth;
  /** The policy in force (policy.yaml overrides); Cyborg's defaults when none. */
  enforcer?: Enforcer;
}

/** Cyborg's defaults: the service token is required with Keystone, not in noauth (so Nova works there unchanged). */
export function authSettings(s: V2Settings = {}): AuthSettings {
  const strategy = s.authStrategy ?? 'noauth';
  return {
    strategy,
    serviceTokenRequired: s.serviceTokenRequired ?? strategy === 'keystone',
    serviceTokenRoles: [...(s.serviceTokenRoles ?? ['service'])],
    enforceNewDefaults: s.enforceNewDefaults ?? false,
    ...(s.keystone ? { keystone: s.keystone } : {}),
    ...(s.enforcer ? { enforcer: s.enforcer } : {}),
  };
}

const RESOURCES = [deviceRoutes, deployableRoutes, attributeRoutes, deviceProfileRoutes, arqRoutes];

/**
 * Registers OpenStack Cyborg's v2 API: `GET /` and `/v2` version documents, the resources under
 * `/v2`, and the same resources unversioned (`/devices` == `/v2/devices`, as Cyborg routes any
 * first segment that is not `v2`). Each lives in its own scope with Cyborg's error body, the
 * microversion headers and the caller's identity. The whole of it is served at the root and again
 * under `/accelerator`, where devstack-style deployments and Keystone catalogs put it; each copy's
 * links stay under its own mount (the second copy is left out of the OpenAPI document).
 */
export async function registerCyborgV2(
  app: FastifyInstance,
  opts: { control: ControlPlane; settings?: V2Settings; trust?: TrustFn; limits?: Partial<ApiLimits> },
): Promise<void> {
  const auth = authSettings(opts.settings);
  const limits = apiLimits(opts.limits);
  const catalogue = new Catalogue(opts.control);
  for (const mount of MOUNTS) {
    const links: LinkSettings = { publicEndpoint: opts.settings?.publicEndpoint, trust: opts.trust, mount };
    await registerMount(app, { control: opts.control, auth, links, catalogue, limits, hide: mount !== '' });
  }
}

async function registerMount(app: FastifyInstance, deps: V2Deps): Promise<void> {
  const { auth, links } = deps;
  const hide = deps.hide ?? false;
  // Before identity: what the headers name is stored, so it must fit its columns (400, not a database error).
  const headerBounds = async (req: FastifyRequest): Promise<void> => {
    const problem = identityHeaderProblem(req.headers);
    if (problem) throw v2Error('request.invalid', `Invalid input: ${problem}`);
  };
  const identityHook = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    req.identity = await identify(req, auth, reply);
  };

  await app.register(
    async (scope) => {
      installV2ErrorHandler(scope, { unseen: deps.control.unseen?.bind(deps.control) });
      await scope.register(rootRoutes, { links, hide });
    },
    { prefix: links.mount },
  );

  await app.register(
    async (scope) => {
      installV2ErrorHandler(scope, { notFound: true, unseen: deps.control.unseen?.bind(deps.control) });
      installLenientJson(scope);
      scope.addHook('onRequest', microversionHook);
      await scope.register(v2DocRoutes, { links, hide });
      await scope.register(async (resources) => {
        resources.addHook('onRequest', headerBounds);
        resources.addHook('onRequest', identityHook);
        for (const r of RESOURCES) await resources.register(r, deps);
      });
    },
    { prefix: `${links.mount}/v2` },
  );

  await app.register(
    async (scope) => {
      installV2ErrorHandler(scope, { unseen: deps.control.unseen?.bind(deps.control) });
      installLenientJson(scope);
      scope.addHook('onRequest', microversionHook);
      scope.addHook('onRequest', headerBounds);
      scope.addHook('onRequest', identityHook);
      for (const r of RESOURCES) await scope.register(r, { ...deps, hide: true });
    },
    { prefix: links.mount },
  );
}

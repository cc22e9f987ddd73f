import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { apiRoot, type LinkSettings } from './links.js';
import { MAX_TEXT, MIN_TEXT } from './microversion.js';
import { Links, TAG } from './schemas.js';
import { PROTOCOL, RELEASE, SCHEMA_REVISION } from '../../release/index.js';

const Version = Type.Object({
  id: Type.String(),
  status: Type.String(),
  min_version: Type.String(),
  max_version: Type.String(),
  links: Links,
});

/** The v2 document, with this service's release beside Cyborg's fields (clients read the fields they know). */
const V2Doc = Type.Intersect([
  Version,
  Type.Object({
    release: Type.String({ description: "this cyborg's release (semver; CHANGELOG.md)" }),
    schema_revision: Type.String({ description: 'the newest database migration it ships' }),
    protocol: Type.Object(
      { current: Type.Integer(), previous: Type.Integer() },
      { description: 'the control protocol it speaks, and the older one it still reads' },
    ),
  }),
]);

const Root = Type.Object({
  name: Type.String(),
  description: Type.String(),
  versions: Type.Array(Version),
  default_version: Version,
});

const DESCRIPTION =
  'Cyborg is the OpenStack project for lifecycle management of hardware accelerators, such as GPUs,FPGAs, AI chips, security accelerators, etc.';

/**
 * `GET /`: the version discovery document (no auth, no microversion headers). Its link is what
 * keystoneauth follows to find the v2 API, so it names the same mount this document came from.
 */
export const rootRoutes: FastifyPluginAsyncTypebox<{ links: LinkSettings; hide?: boolean }> = async (app, opts) => {
  app.get(
    '/',
    {
      schema: { tags: [TAG], summary: 'Version discovery (no auth)', hide: opts.hide, response: { 200: Root } },
    },
    async (req) => {
      const v = { id: 'v2', status: 'CURRENT', min_version: MIN_TEXT, max_version: MAX_TEXT, links: [{ href: `${apiRoot(req, opts.links)}/v2`, rel: 'self' }] };
      return { name: 'OpenStack Cyborg API', description: DESCRIPTION, versions: [v], default_version: v };
    },
  );
};

/** `GET /v2` (and `/v2/`): the v2 document, with the microversion headers (no auth). */
export const v2DocRoutes: FastifyPluginAsyncTypebox<{ links: LinkSettings; hide?: boolean }> = async (app, opts) => {
  app.get(
    '/',
    {
      schema: { tags: [TAG], summary: 'The v2 version document (no auth)', hide: opts.hide, response: { 200: V2Doc } },
    },
    async (req) => ({
      id: 'v2.0',
      status: 'CURRENT',
      min_version: MIN_TEXT,
      max_version: MAX_TEXT,
      links: [{ href: `${apiRoot(req, opts.links)}/v2/`, rel: 'self' }],
      release: RELEASE,
      schema_revision: SCHEMA_REVISION,
      protocol: { current: PROTOCOL.current, previous: PROTOCOL.previous },
    }),
  );
};

import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { freshDatabase } from '../support/database.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack, type StackOptions } from '../support/stack.js';
import { KEYSTONE_URL, serviceAuth } from './peer.js';

export interface KeystoneStack {
  stack: Stack;
  /** The api in keystone mode, listening on a free port of 127.0.0.1. */
  app: FastifyInstance;
  url: string;
  validator: TokenValidator;
  stop: () => Promise<void>;
}

/**
 * A stack as production runs it for people: the log in a fresh PostgreSQL database of its own
 * (`prefix`), the api in keystone mode against the real Keystone (the `cyborg` service user
 * validates tokens and looks names up), listening for a browser or the CLI.
 */
export async function startKeystoneStack(prefix: string, fake: StackOptions['fake'] = {}): Promise<KeystoneStack> {
  const db = await freshDatabase(prefix);
  const stack = await startStack({ log: quietLogger(), fake, journal: { databaseUrl: db.url } });
  const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), timeoutMs: 10_000 });
  const validator = new TokenValidator({ session, cache: { ttlMs: 300_000 }, timeoutMs: 10_000 });
  const app = await buildApi({
    control: stack.conductor,
    log: quietLogger(),
    v2: { authStrategy: 'keystone' },
    auth: { keystone: { validator, wwwAuthenticateUri: 'http://127.0.0.1:15001' } },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    stack,
    app,
    url,
    validator,
    stop: async () => {
      await app.close();
      await stack.stop();
      await db.drop();
    },
  };
}

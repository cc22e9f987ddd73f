import { OPTIONS } from '../../config/options.js';

/**
 * The operator's own settings a shell on an OpenStack controller carries: `source admin-openrc`
 * exports OS_AUTH_URL, OS_PASSWORD, OS_CLOUD…; a deployment may export CYBORG_CONFIG_FILE or any
 * cyborg option's variable. A test that inherited them would judge cyborg by that machine's cloud
 * and config (a CLI signing in to the operator's Keystone, a role reading /etc/cyborg/cyborg.conf),
 * so every test starts without them and says what it wants itself. The suite's inputs stay:
 * DATABASE_URL, NATS_URL, PLACEMENT_URL, KEYSTONE_*, CYBORG_TEST_* (test/services.ts).
 */
const CYBORG_OPTIONS = new Set([
  ...OPTIONS.flatMap((o) => (o.env?.startsWith('CYBORG_') ? [o.env] : [])),
  'CYBORG_CONFIG_FILE',
  'CYBORG_CONFIG_DIR',
  'CYBORG_URL',
]);

export function isOperatorSetting(name: string): boolean {
  return name.startsWith('OS_') || CYBORG_OPTIONS.has(name);
}

/** Removes the operator's settings from `env` (in place), and names the ones it removed. */
export function dropOperatorSettings(env: NodeJS.ProcessEnv = process.env): string[] {
  const dropped = Object.keys(env).filter(isOperatorSetting);
  for (const name of dropped) delete env[name];
  return dropped.sort();
}

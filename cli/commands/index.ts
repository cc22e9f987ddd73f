import type { Command } from 'commander';
import { processIo, type Io } from '../output.js';
import { forgetTokens, tokenCacheDir } from '../auth/index.js';
import { addAcceleratorCommands } from './accelerators.js';
import { addAuditCommands } from './audit.js';
import { addCapacityCommands } from './capacity.js';
import { addDriverCommands } from './drivers.js';
import { addFakeCommands } from './fake.js';
import { addLifecycleCommands } from './release.js';
import { addInstanceCommands } from './instances.js';
import { addMaintenanceCommands } from './maintenance.js';
import { addPolicyCommands } from './policy.js';
import { addServiceCommands } from './services.js';
import { addUsageCommands } from './usage.js';

/**
 * The operator commands (docs/cli.md): the generic-driver spec's driver-list, install-driver,
 * uninstall-driver, update-driver, service-list, discover-services, attach-instance,
 * detach-instance, `accelerator …`, and the operators' own (maintenance, audit, usage, projects).
 * They talk to the API over HTTP (--url / CYBORG_URL).
 */
export function addOperatorCommands(program: Command, io: Io = processIo): void {
  addDriverCommands(program, io);
  addServiceCommands(program, io);
  addInstanceCommands(program, io);
  addAcceleratorCommands(program, io);
  addMaintenanceCommands(program, io);
  addPolicyCommands(program, io);
  addAuditCommands(program, io);
  addUsageCommands(program, io);
  addFakeCommands(program, io);
  addCapacityCommands(program, io);
  addLifecycleCommands(program, io);
  program
    .command('logout')
    .description('forget the Keystone tokens --token-cache kept (~/.cache/cyborg)')
    .action(() => {
      const removed = forgetTokens();
      io.out(removed.length ? `signed out: removed ${removed.length} cached token(s) from ${tokenCacheDir()}\n` : `no cached token in ${tokenCacheDir()}\n`);
    });
}

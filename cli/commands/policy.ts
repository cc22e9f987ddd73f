import { configSources } from '../boot.js';
import { Command } from 'commander';
import { loadConfig } from '../../config/index.js';
import { CYBORG_RULES, Enforcer, PolicyFileError } from '../../policy/index.js';
import { table, type Io } from '../output.js';

/**
 * `cyborg policy list`: every rule as the api would enforce it now, with the configuration's
 * policy file, enforce_new_defaults and enforce_scope (like oslopolicy-policy-generator). A bad
 * policy file is reported naming the rule, with exit code 1, as the api's start would.
 */
export function addPolicyCommands(program: Command, io: Io): void {
  const policy = new Command('policy').description("the API's policy rules (oslo.policy language; policy.yaml overrides)");
  policy
    .command('list')
    .description('print the effective rules: defaults in code, deprecated rules OR-ed in, policy.yaml overrides')
    .option('--json', 'JSON instead of a table')
    .action((o: { json?: boolean }, cmd: Command) => {
      const config = loadConfig({}, process.env, { role: 'api', ...configSources(cmd) });
      let enforcer: Enforcer;
      try {
        enforcer = new Enforcer(CYBORG_RULES, {
          enforceNewDefaults: config.v2.enforceNewDefaults,
          enforceScope: config.osloPolicy.enforceScope,
          policyFile: config.osloPolicy.policyFile,
        });
      } catch (err) {
        if (!(err instanceof PolicyFileError)) throw err;
        io.err(`cyborg: ${err.message}\n`);
        io.setExitCode(1);
        return;
      }
      const rules = enforcer.effective();
      if (o.json) {
        io.out(`${JSON.stringify(rules, null, 2)}\n`);
        return;
      }
      io.out(
        `# policy file: ${config.osloPolicy.policyFile ?? '(none)'}; enforce_new_defaults = ${config.v2.enforceNewDefaults}; enforce_scope = ${config.osloPolicy.enforceScope}\n`,
      );
      io.out(
        table(
          ['RULE', 'CHECK', 'FROM', 'SCOPE', 'OPERATIONS'],
          rules.map((r) => [r.name, r.check, r.source, r.scopeTypes?.join(',') ?? '', r.operations?.join('; ') ?? '']),
        ),
      );
    });
  program.addCommand(policy);
}

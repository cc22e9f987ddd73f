import { InvalidArgumentError, Option, type Command } from 'commander';
import { PORTS } from '../../config/index.js';
import { addOpenStackOptions, authFailure, CliTokenCache, connect, deploymentOf, identityOf, openStackValues, planAuth, type AuthPlan } from '../auth/index.js';
import { ApiClient } from '../client.js';
import { describeError, exitCodeFor, ExitCode, type Io } from '../output.js';

/** What every operator command gets: the API client, the output mode and where to write. */
export interface Ctx {
  api: ApiClient;
  json: boolean;
  io: Io;
  url: string;
  /** A command that succeeded with a caveat (partial failure) sets a non-zero code here. */
  exitCode: number;
}

interface ClientFlags {
  url: string;
  json?: boolean;
  verbose?: boolean;
  tokenCache?: boolean;
  timeout: number;
}

function seconds(v: string): number {
  const n = Number(v);
  // commander turns this error into one usage line (exit 2); a plain Error was a stack trace.
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('a number of seconds is wanted');
  return n;
}

/**
 * An option's argument that must be a whole number of at least 1 (`--limit`). An InvalidArgumentError,
 * never a plain Error: commander turns only that into its usage line and exit 2; a plain Error escaped
 * as a stack trace and exit 1.
 */
export function positiveInteger(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('a positive integer is wanted');
  return n;
}

/**
 * A subcommand that talks to the API: --url / CYBORG_URL, --json, --timeout, and the openstack
 * CLI's --os-* options (cli/auth: clouds.yaml, OS_* variables); usage errors exit 2.
 */
export function apiCommand(parent: Command, spec: string, description: string, io: Io): Command {
  return addOpenStackOptions(parent.command(spec).description(description))
    .addOption(
      new Option('--url <url>', "the Cyborg API (default with --os-* / OS_*: the accelerator endpoint of Keystone's catalog)")
        .env('CYBORG_URL')
        .default(`http://127.0.0.1:${PORTS.allInOne}`),
    )
    .option('--json', 'print JSON (for scripts) instead of tables')
    .addOption(
      new Option(
        '--token-cache',
        "keep the Keystone token across commands until it expires (mode 0600 under ~/.cache/cyborg; clouds.yaml's cache: {auth: true} too; cyborg logout forgets it)",
      ).env('CYBORG_TOKEN_CACHE'),
    )
    .option('-v, --verbose', 'say on stderr which deployment this command talks to (URL, cloud and region) before it does')
    .addOption(new Option('--timeout <seconds>', 'give up waiting for the API after this long').default(300).argParser(seconds))
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride((e) => io.usageExit(e.exitCode === 0 ? ExitCode.ok : ExitCode.usage));
}

/** A group of subcommands (`cyborg accelerator …`) with the same output and exit rules. */
export function group(parent: Command, name: string, description: string, io: Io): Command {
  return parent
    .command(name)
    .description(description)
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride((e) => io.usageExit(e.exitCode === 0 ? ExitCode.ok : ExitCode.usage));
}

/**
 * Sets the action: builds the context from the flags, runs `fn` with the positional arguments
 * and the command's options, prints an error as a person should read it and sets the exit code.
 */
export function act<O>(cmd: Command, io: Io, fn: (ctx: Ctx, args: string[], opts: O) => Promise<void>): Command {
  return cmd.action(async (...all: unknown[]) => {
    const command = all.at(-1) as Command;
    const flags = command.opts<ClientFlags & O>();
    const ctx: Ctx = { api: new ApiClient(flags.url, flags.timeout * 1000), json: Boolean(flags.json), io, url: flags.url, exitCode: ExitCode.ok };
    let plan: AuthPlan | undefined;
    // The API's URL once known: given, or (signed in) the catalog's.
    let known: string | undefined;
    try {
      // Signed in as the openstack CLI would be (or not at all: noauth), at --url or the catalog's endpoint.
      plan = planAuth(openStackValues(command));
      const explicit = command.getOptionValueSource('url') !== 'default' && flags.url !== '';
      if (explicit || plan.kind !== 'keystone') known = flags.url;
      const cache =
        plan.kind === 'keystone' && (flags.tokenCache || plan.cacheAuth)
          ? new CliTokenCache(identityOf(plan.authUrl, plan.auth), (line) => io.err(`cyborg: warning: ${line}\n`))
          : undefined;
      const conn = await connect(plan, { value: flags.url, explicit }, flags.timeout * 1000, cache);
      ctx.api = new ApiClient(conn.url, flags.timeout * 1000, conn.auth);
      ctx.url = known = conn.url;
      if (flags.verbose) io.err(`cyborg: talking to ${deploymentOf(plan, known)}\n`);
      await fn(ctx, all.slice(0, -2) as string[], flags);
      io.setExitCode(ctx.exitCode);
    } catch (err) {
      const auth = authFailure(err, plan);
      const text = auth?.exitCode !== undefined ? auth.text : describeError(err, ctx.url) + (auth?.text ?? '');
      // Every error names the deployment (the same command may reach another one than the user
      // thought), once there is one: options that cannot be used name none.
      io.err(plan ? `${text}  deployment: ${deploymentOf(plan, known)}\n` : text);
      io.setExitCode(auth?.exitCode ?? exitCodeFor(err));
    }
  });
}

/** JSON for scripts: stable, indented, one document per command. */
export function printJson(ctx: Ctx, value: unknown): void {
  ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);
}

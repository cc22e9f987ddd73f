import type { Command } from 'commander';
import { table, type Io } from '../output.js';
import { act, apiCommand, positiveInteger, printJson } from './common.js';
import type { AuditEntry } from '../../model/index.js';

interface AuditFlags {
  host?: string;
  accelerator?: string;
  user?: string;
  project?: string;
  action?: string;
  since?: string;
  until?: string;
  limit: number;
}

/** `k=v` pairs of an entry's arguments, as one cell. */
function args(e: AuditEntry): string {
  return e.args
    ? Object.entries(e.args)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(' ')
    : '';
}

/** A user or project as people know it: its name with its id (the id alone where no name was kept). */
function named(id: string | undefined, name: string | undefined): string {
  if (!id) return name ?? '';
  return name && name !== id ? `${name} (${id})` : id;
}

function rows(entries: AuditEntry[]): string {
  return table(
    ['AT', 'WHO', 'PROJECT', 'KIND', 'ID', 'HOST', 'EVENT', 'FROM → TO', 'ARGS', 'WHY', 'REQUEST'],
    entries.map((e) => [
      e.at,
      named(e.actor, e.actorName),
      named(e.projectId, e.projectName),
      e.kind,
      e.id,
      e.host ?? '',
      e.event,
      `${e.from} → ${e.to}`,
      args(e),
      e.reason ?? '',
      e.requestId ?? '',
    ]),
  );
}

/**
 * `cyborg audit`: who did what to which accelerator, host or driver, newest first. Follows the
 * API's `next` links until `--limit` rows are shown.
 */
export function addAuditCommands(program: Command, io: Io): void {
  act<AuditFlags>(
    apiCommand(program, 'audit', 'Show the audit log (every transition and operator or driver action, with who asked), newest first', io)
      .option('--host <host>', 'only this host')
      .option('--accelerator <id>', 'only this accelerator (or ARQ, host, driver id)')
      .option('--user <user>', 'only what this user asked: a name or an id (or agent:<id>, conductor)')
      .option('--project <project>', 'only what callers of this project asked: a name or an id')
      .option('--action <action>', 'only this event: enable, program, install, timer: stale, …')
      .option('--since <time>', 'from this time on (ISO 8601)')
      .option('--until <time>', 'before this time (ISO 8601)')
      .option('--limit <n>', 'most rows shown', positiveInteger, 50),
    io,
    async (ctx, _args, o) => {
      const query = { host: o.host, accelerator: o.accelerator, user: o.user, project: o.project, action: o.action, since: o.since, until: o.until };
      const entries: AuditEntry[] = [];
      let page = await ctx.api.get<{ audit: AuditEntry[]; next?: string }>('/audit', { ...query, limit: String(o.limit) });
      for (;;) {
        entries.push(...page.audit.slice(0, o.limit - entries.length));
        if (entries.length >= o.limit || page.next === undefined) break;
        page = await ctx.api.get(page.next.replace(/^.*?\/cyborg\/v1/, ''));
      }
      if (ctx.json) printJson(ctx, entries);
      else io.out(entries.length ? rows(entries) : 'Nothing in the audit log matches.\n');
    },
  );
}

import { execFile } from 'node:child_process';
import { basename } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * What `systemd-analyze verify` says about the given unit files, and only about them.
 *
 * verify loads the machine's unit tree beside the files it is given, and on an OpenStack
 * controller it also reports the units Debian's keystone, placement-api or nova-api packages
 * installed (`keystone.service: Dependency After=keystone.service is dropped.`): those are another
 * package's to fix, and a test that judged ours by them would fail on every controller. A line is
 * dropped only when it names another unit (`other.service: …`) or another unit's file
 * (`/lib/systemd/system/other.service:12: …`) first; every other line, ours or one naming no unit,
 * is kept, so that nothing about ours is lost to the filter.
 */
export async function verifyUnits(paths: string[], env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  // It exits 1 on any finding, ours or another unit's: what it says is what counts.
  const { stdout, stderr } = await run('systemd-analyze', ['verify', '--man=no', ...paths], { env }).catch((err: { stdout?: string; stderr?: string }) => ({
    stdout: err.stdout ?? '',
    stderr: err.stderr ?? '',
  }));
  const ours = new Set(paths.map((p) => basename(p)));
  return `${stdout}${stderr}`.split('\n').filter((line) => line && !aboutAnotherUnit(line, ours));
}

/** The unit a line of systemd's output is about, when it starts by naming one (`name.type:` or `/path/name.type:N:`). */
const SUBJECT = /^(?:\S*\/)?([\w@.\\-]+\.(?:service|socket|target|timer|path|mount|automount|swap|slice|scope|device))(?::\d+)?:/;

function aboutAnotherUnit(line: string, ours: Set<string>): boolean {
  const subject = SUBJECT.exec(line)?.[1];
  return subject !== undefined && !ours.has(subject);
}

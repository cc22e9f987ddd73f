/**
 * bench:api's sse section: what event-stream clients cost the api. The clients run in a child
 * process of their own (so their sockets and buffers are not counted), connect to
 * `/cyborg/v1/events`, and stay while a burst of transitions is published to all of them; the
 * api's RSS is read before, with all connected, and after they left. Clients past
 * `api.sseMaxClients` are answered 503 — the bound is part of what is measured.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { ControlPlane } from '../../model/index.js';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { AcceleratorStates } from '../../machines/index.js';

export interface SseSectionOptions {
  url: string;
  clients: number;
  maxClients: number;
  control: ControlPlane;
  hosts: string[];
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(0)} MiB`;

function rss(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().rss;
}

export async function sseSection(o: SseSectionOptions): Promise<void> {
  const before = rss();
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'sse-clients.ts'), o.url, String(o.clients)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let buf = '';
  const connected = new Promise<{ open: number; refused: number }>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      buf += b.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
        const m = /^connected (\d+) refused (\d+)$/.exec(lines.at(-1)!);
        if (m) resolve({ open: Number(m[1]), refused: Number(m[2]) });
      }
    });
    child.once('exit', (code) => reject(new Error(`sse clients exited (${code}): ${lines.join(' | ')}`)));
  });
  const { open, refused } = await connected;
  // Events flowing to every client: enable and disable the hosts' FPGAs a few times.
  const ids = o.hosts.map((h) => o.control.getAcceleratorByRp(uuid3(NAMESPACE_DNS, `${h}_FakeDevice`))?.id).filter((id): id is string => id !== undefined);
  const t0 = performance.now();
  let transitions = 0;
  for (let round = 0; round < 5; round++) {
    for (const id of ids) {
      const a = o.control.getAccelerator(id);
      if (a?.state === AcceleratorStates.ready)
        await o.control.act(id, { type: 'DISABLE' }).then(
          () => transitions++,
          () => undefined,
        );
      else if (a?.state === AcceleratorStates.inactive)
        await o.control.act(id, { type: 'ENABLE' }).then(
          () => transitions++,
          () => undefined,
        );
    }
  }
  for (const id of ids)
    if (o.control.getAccelerator(id)?.state === AcceleratorStates.inactive) await o.control.act(id, { type: 'ENABLE' }).catch(() => undefined);
  const busyS = (performance.now() - t0) / 1000;
  const withClients = rss();
  child.kill('SIGTERM');
  await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
  await new Promise((r) => setTimeout(r, 500));
  const after = rss();
  console.log(`\nevent stream, ${o.clients} clients (api.sseMaxClients = ${o.maxClients}): ${open} connected, ${refused} refused (503)`);
  console.log(
    `  api RSS: before ${mib(before)}, with the clients ${mib(withClients)} (+${mib(withClients - before)}, ${((withClients - before) / 1024 / Math.max(1, open)).toFixed(1)} KiB a client), after they left ${mib(after)}; ${transitions} operator actions published to them in ${busyS.toFixed(1)} s`,
  );
}

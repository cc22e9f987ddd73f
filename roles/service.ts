import { Type } from '@sinclair/typebox';
import type { Bus, Unsubscribe } from '../bus/index.js';
import { Subjects } from '../bus/index.js';

const Empty = Type.Object({}, { additionalProperties: false });
/** STATS may ask to collect garbage first (measuring memory) and to start a fresh lag window. */
const StatsRequest = Type.Object(
  {
    gc: Type.Optional(Type.Boolean()),
    resetWindow: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const Reply = Type.Record(Type.String(), Type.Unknown());

/**
 * A role's liveness over NATS: `cyborg.svc.<role>.<id>.PING|INFO|STATS` (the shape of a NATS
 * micro-service, without `@nats-io/services`, which npm only has as a prerelease). An operator
 * asks with `nats req cyborg.svc.conductor.<id>.PING ''`.
 */
export function serveService(
  bus: Bus,
  role: string,
  id: string,
  parts: {
    info: () => Record<string, unknown>;
    stats: (req: { resetWindow?: boolean }) => Record<string, unknown>;
  },
): Unsubscribe {
  const startedAt = new Date().toISOString();
  const base = (): Record<string, unknown> => ({ role, id, startedAt, pid: process.pid });
  const offs = [
    bus.respond(Subjects.service(role, id, 'PING'), Empty, Reply, () => ({ ...base(), at: new Date().toISOString() })),
    bus.respond(Subjects.service(role, id, 'INFO'), Empty, Reply, () => ({ ...base(), ...parts.info() })),
    bus.respond(Subjects.service(role, id, 'STATS'), StatsRequest, Reply, (req) => {
      const gc = (globalThis as { gc?: () => void }).gc;
      if (req.gc && gc) gc();
      const mem = process.memoryUsage();
      return {
        ...base(),
        rssBytes: mem.rss,
        heapUsedBytes: mem.heapUsed,
        heapTotalBytes: mem.heapTotal,
        externalBytes: mem.external,
        cpu: process.cpuUsage(),
        uptimeS: process.uptime(),
        ...parts.stats(req),
      };
    }),
  ];
  return () => offs.forEach((o) => o());
}

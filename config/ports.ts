/**
 * Default ports, and the ports browsers refuse.
 *
 * Cyborg's registered port is 6666 (`[api] port`), where Nova and the Keystone catalog of an
 * OpenStack cloud expect it; the `api` role keeps it. But 6666 is on the Fetch standard's list of
 * "bad ports" (IRC's 6665–6669), so Chrome, Firefox and Safari refuse to open it and Node's fetch
 * refuses to call it. The all-in-one, whose first use is a person opening the visualizer, listens
 * on 6680 instead: outside that list and near Cyborg's own.
 */
export const PORTS = {
  allInOne: 6680,
  api: 6666,
  conductorMetrics: 9180,
  agentMetrics: 9181,
} as const;

/** The Fetch standard's "bad ports" (https://fetch.spec.whatwg.org/#port-blocking). */
const BLOCKED = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137,
  139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** True when browsers (and fetch) refuse to connect to this port. */
export function browserBlocksPort(port: number): boolean {
  return BLOCKED.has(port);
}

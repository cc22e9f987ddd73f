/**
 * Nova's clients in a process of their own, as Nova's are: `lifecycle-clients.ts <api url>
 * <clients> <seconds> <host,host,…>` runs the same lifecycle as bench/api/lifecycle.ts's (create →
 * bind → wait until resolved → delete) against the api, then prints its result as one JSON line
 * (with the CPU this process spent) and exits. In-process, the clients' HTTP work shares the
 * api's event loop; here it has its own (issue 43, item 4: the difference is in docs/benchmarks.md).
 */
import { breakdown, lifecycle } from './lifecycle.js';

const [url, clients, seconds, hosts] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4]), process.argv[5]!.split(',')];
const cpu = process.cpuUsage();
const r = await lifecycle(url, clients, hosts, seconds);
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ ...r, steps: breakdown(), cpuS: (used.user + used.system) / 1e6 }));
process.exit(0);

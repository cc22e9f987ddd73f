// Runs the NVIDIA driver's discovery on this machine's real /sys and nvidia-smi and prints it.
import { hostname } from 'node:os';
import { NvidiaGpuDriver } from '../drivers/nvidia/index.js';

const sysfsRoot = process.argv[2] ?? '/sys';
const smi = process.argv[3] ? [process.argv[3]] : ['nvidia-smi'];
const driver = new NvidiaGpuDriver({ host: hostname(), sysfsRoot, nvidiaSmi: smi, stateDir: '/tmp/cyborg-nvidia-state' });
const started = Date.now();
const { devices, unobserved } = await driver.discoverPartial();
const ms = Date.now() - started;
let observed: unknown = null;
try {
  observed = await driver.observe(devices);
} catch (err) {
  observed = { error: String(err) };
}
console.log(JSON.stringify({ ms, devices, unobserved: unobserved.map((u) => ({ deviceUuid: u.deviceUuid, reason: u.reason })), observed }, null, 2));

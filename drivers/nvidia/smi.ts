import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { malformed } from '../exec.js';
import { CyborgError } from '../../errors/index.js';

/**
 * Readers of `nvidia-smi` output. `-q -x` is XML with a published DTD (nvsmi_device_v12.dtd:
 * `nvidia_smi_log/gpu[@id]` with `product_name`, `uuid`, `pci/pci_bus_id`, `pci/pci_device_id`,
 * `mig_mode/{current_mig,pending_mig}`, `mig_devices/mig_device/{index,gpu_instance_id,
 * compute_instance_id}`); `mig -lgip` and `mig -lgi` are the boxed text tables NVIDIA's MIG user
 * guide shows. Anything else ends in a DriverError with reason `malformed_output`.
 */

export interface SmiGpu {
  /** nvidia-smi's GPU index: the order of `<gpu>` elements, what `mig -i` takes. */
  index: number;
  /** Linux form, lower case: `0000:3b:00.0` (nvidia-smi writes `00000000:3B:00.0`). */
  address: string;
  productName: string;
  uuid: string;
  /** `Enabled` / `Disabled` / `N/A` (no MIG on this card). */
  migCurrent: string;
  migPending: string;
  migDevices: { gpuInstanceId: number; computeInstanceId: number }[];
}

export interface GpuInstanceProfile {
  gpu: number;
  /** `1g.10gb`, `1g.10gb+me`, `7g.80gb`: the name after `MIG `. */
  name: string;
  id: number;
  free: number;
  total: number;
  memoryGiB: number;
}

export interface GpuInstance {
  gpu: number;
  name: string;
  profileId: number;
  instanceId: number;
  placement: string;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  isArray: (name) => name === 'gpu' || name === 'mig_device',
});

/** nvidia-smi's `00000000:3B:00.0` as the kernel names the function: `0000:3b:00.0`. */
export function linuxAddress(smiBusId: string): string {
  const m = /^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$/.exec(smiBusId.trim());
  if (!m) throw new CyborgError('driver.failed', `not a PCI bus id: ${smiBusId}`);
  return `${m[1]!.slice(-4)}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase();
}

type Node = Record<string, unknown>;

function field(node: Node, ...path: string[]): string {
  let cur: unknown = node;
  for (const p of path) cur = cur && typeof cur === 'object' ? (cur as Node)[p] : undefined;
  return typeof cur === 'string' ? cur.trim() : '';
}

/** Reads `nvidia-smi -q -x`. */
export function parseQueryXml(xml: string): SmiGpu[] {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw malformed('nvidia-smi -q -x', `not XML (${valid.err.msg}, line ${valid.err.line})`);
  const doc = parser.parse(xml) as Node;
  const log = doc.nvidia_smi_log as Node | undefined;
  if (!log || typeof log !== 'object') throw malformed('nvidia-smi -q -x', 'no <nvidia_smi_log> element');
  const gpus = (log.gpu as Node[] | undefined) ?? [];
  return gpus.map((g, index) => {
    const busId = field(g, 'pci', 'pci_bus_id') || String(g['@id'] ?? '');
    let address: string;
    try {
      address = linuxAddress(busId);
    } catch {
      throw malformed('nvidia-smi -q -x', `GPU ${index} has no PCI bus id`);
    }
    const devs = g.mig_devices && typeof g.mig_devices === 'object' ? (((g.mig_devices as Node).mig_device as Node[] | undefined) ?? []) : [];
    return {
      index,
      address,
      productName: field(g, 'product_name'),
      uuid: field(g, 'uuid'),
      migCurrent: field(g, 'mig_mode', 'current_mig') || 'N/A',
      migPending: field(g, 'mig_mode', 'pending_mig') || 'N/A',
      migDevices: devs.map((d) => ({
        gpuInstanceId: int(field(d, 'gpu_instance_id'), 'gpu_instance_id'),
        computeInstanceId: int(field(d, 'compute_instance_id'), 'compute_instance_id'),
      })),
    };
  });
}

function int(text: string, what: string): number {
  if (!/^\d+$/.test(text)) throw malformed('nvidia-smi', `${what} "${text}" is not a number`);
  return Number(text);
}

/** The data rows of a boxed table: lines `| ... |` after the `|===|` rule, separators skipped. */
function tableRows(text: string, what: string): string[][] {
  const lines = text.split('\n');
  const rule = lines.findIndex((l) => /^\|=+\|$/.test(l.trim()));
  if (rule < 0) throw malformed(what, 'no table header');
  return lines
    .slice(rule + 1)
    .map((l) => l.trim())
    .filter((l) => l.startsWith('|') && l.endsWith('|'))
    .map((l) => l.slice(1, -1).trim().split(/\s+/))
    .filter((cells) => cells[1] === 'MIG');
}

/**
 * Reads `nvidia-smi mig -lgip`: one row per GPU and profile,
 * `GPU  Name  ID  Free/Total  Memory  P2P  SM  DEC  ENC` (the second line of each profile,
 * CE / JPEG / OFA, has no name and is skipped).
 */
export function parseLgip(text: string): GpuInstanceProfile[] {
  const rows = tableRows(text, 'nvidia-smi mig -lgip');
  return rows.map((c) => {
    const [gpu, , name, id, inst, mem] = c;
    const m = /^(\d+)\/(\d+)$/.exec(inst ?? '');
    if (!name || !m || !/^\d+$/.test(gpu ?? '') || !/^\d+$/.test(id ?? '') || Number.isNaN(Number(mem))) {
      throw malformed('nvidia-smi mig -lgip', `row "${c.join(' ')}"`);
    }
    return { gpu: Number(gpu), name, id: Number(id), free: Number(m[1]), total: Number(m[2]), memoryGiB: Number(mem) };
  });
}

/**
 * Reads `nvidia-smi mig -lgi`: `GPU  Name  Profile-ID  Instance-ID  Start:Size`. An empty list
 * when there is none: "No GPU instances found" (a MIG GPU without instances), and "No MIG-enabled
 * devices found." — what driver 580 prints, exit status 0, on a host whose GPUs are all out of MIG
 * mode (captured on an H100: test/fixtures/captures/h100-vm/).
 */
export function parseLgi(text: string): GpuInstance[] {
  if (/No GPU instances found|No MIG-enabled devices found/i.test(text)) return [];
  const rows = tableRows(text, 'nvidia-smi mig -lgi');
  return rows.map((c) => {
    const [gpu, , name, profileId, instanceId, placement] = c;
    if (!name || !/^\d+$/.test(gpu ?? '') || !/^\d+$/.test(profileId ?? '') || !/^\d+$/.test(instanceId ?? '') || !/^\d+:\d+$/.test(placement ?? '')) {
      throw malformed('nvidia-smi mig -lgi', `row "${c.join(' ')}"`);
    }
    return { gpu: Number(gpu), name, profileId: Number(profileId), instanceId: Number(instanceId), placement: placement! };
  });
}

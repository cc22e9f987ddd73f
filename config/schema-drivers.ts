import { Type } from '@sinclair/typebox';
import { PORTS } from './ports.js';

/** The sections of the schema for the agent and the drivers it loads. Assembled into ConfigSchema by schema.ts. */

/**
 * The names `[agent] enabled_drivers` takes: the keys of drivers/registry.ts's DRIVER_FACTORIES
 * (a test keeps them equal; config stays free of the drivers' code).
 */
export const DRIVER_NAMES = [
  'fake_driver',
  'generic',
  'generic_driver',
  'nvidia_gpu_driver',
  'intel_fpga_driver',
  'xilinx_fpga_driver',
  'intel_nic_driver',
  'intel_qat_driver',
  'pci_driver',
] as const;

/** A PCI id as `lspci -n` and docs/drivers.md write it: `vendor:product`, lower-case hex. */
const PCI_ID = Type.String({ pattern: '^[0-9a-f]{4}:[0-9a-f]{4}$', description: 'vendor:product, lower-case hex (8086:1593)' });

/** The agent role (Cyborg's `[agent]`). */
export const agentSchema = Type.Object(
  {
    enabledDrivers: Type.Array(Type.Union(DRIVER_NAMES.map((n) => Type.Literal(n))), {
      default: ['fake_driver'],
      description: `the drivers this agent loads, as Cyborg names them (docs/drivers.md): ${DRIVER_NAMES.join(', ')} (the all-in-one defaults to fake_driver; the agent role to none)`,
    }),
    autoEnable: Type.Boolean({
      default: false,
      description: 'a newly discovered accelerator is enabled at once (ready for Nova) instead of waiting inactive for an operator',
    }),
    metricsPort: Type.Integer({
      minimum: -1,
      maximum: 65535,
      default: PORTS.agentMetrics,
      description: "the agent's health + /metrics listener; 0: any free port, -1: off",
    }),
    hotplug: Type.Union([Type.Literal('udevadm'), Type.Literal('off')], {
      default: 'udevadm',
      description:
        'udevadm: kernel uevents (udevadm monitor) start a discovery at once, beside the periodic scan; off: the periodic scan alone. Without udevadm, or with only the fake driver, the periodic scan alone',
    }),
    libvirtStateDir: Type.String({
      maxLength: 4096,
      default: '/run/libvirt/qemu',
      description:
        "libvirt's live domain files: attach handles that running guests hold and no record holds (a host that ran OpenStack Cyborg before) are adopted for their instances; empty: none looked at",
    }),
    udevadmCommand: Type.String({
      minLength: 1,
      default: 'udevadm',
      description:
        'argv of udevadm (space-separated; e.g. "nsenter -t 1 -n udevadm" in a container); "monitor --kernel --property --subsystem-match=…" is appended',
    }),
  },
  { default: {} },
);

/** The generic driver (docs/generic-driver.md): PCI accelerators from sysfs, beside the fake driver. */
export const genericSchema = Type.Object(
  {
    enabled: Type.Boolean({ default: false }),
    sysfsRoot: Type.String({ minLength: 1, default: '/sys', description: 'where sysfs is mounted (a fixture tree for demos)' }),
    passthroughWhitelist: Type.String({ default: '', description: 'Nova-style [pci] passthrough_whitelist JSON; empty: built-in defaults' }),
    hostOps: Type.Union([Type.Literal('sysfs'), Type.Literal('command'), Type.Literal('simulate')], { default: 'sysfs' }),
    helper: Type.String({ default: '', description: 'command mode: the helper every host operation is handed to (argv, space-separated)' }),
    installCommand: Type.String({ default: '', description: 'sysfs mode: run on install-driver ({version} is filled in)' }),
    uninstallCommand: Type.String({ default: '' }),
    updateCommand: Type.String({ default: '' }),
    programCommand: Type.String({ default: '', description: 'sysfs mode: programs a card ({address}, {image})' }),
    vfioDriver: Type.String({ minLength: 1, default: 'vfio-pci' }),
    version: Type.String({ minLength: 1, default: '1.0.0' }),
  },
  { default: {} },
);

/** The NVIDIA driver (Cyborg's `[gpu_devices]` and its `[vgpu_<type>]` sections; docs/drivers.md). */
export const gpuSchema = Type.Object(
  {
    enabledVgpuTypes: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'mdev types (nvidia-35, …) offered as vGPUs; each needs a [vgpu_<type>] section naming its GPUs',
    }),
    /** `[vgpu_<type>] device_addresses`, by type: read from the dynamic sections, not from one option. */
    vgpuDeviceAddresses: Type.Record(Type.String(), Type.Array(Type.String({ minLength: 1 })), {
      default: {},
      description: 'the GPUs (PCI addresses) that offer this vGPU type; one type per GPU',
    }),
    filterSriovVfs: Type.Boolean({ default: false, description: 'SR-IOV virtual functions of a GPU are not reported as pGPUs' }),
    nvidiaSmi: Type.String({ default: '', description: 'argv of nvidia-smi (space-separated) for MIG; empty: MIG is not looked at' }),
    commandTimeoutMs: Type.Integer({ minimum: 1, default: 30_000, description: 'deadline of each nvidia-smi call' }),
    xidFatal: Type.Array(Type.String({ pattern: '^[0-9]{1,4}$' }), {
      default: [],
      description: 'Xid codes that quarantine a GPU at once until it is reset; empty: the built-in list (docs/drivers.md, Xid events)',
    }),
    xidTransient: Type.Array(Type.String({ pattern: '^[0-9]{1,4}$' }), {
      default: [],
      description: 'Xid codes that degrade a GPU and count towards quarantine; a code named here leaves the built-in lists',
    }),
    xidIgnored: Type.Array(Type.String({ pattern: '^[0-9]{1,4}$' }), {
      default: [],
      description:
        'Xid codes logged but not counted (the application-level 13, 31, 43, 45 and the informational 63 by default); a code named here leaves the built-in lists',
    }),
    xidCommand: Type.String({
      default: '',
      description:
        'argv (space-separated) of a command that follows the kernel log, whose NVIDIA Xid lines are health events reported at once (e.g. "dmesg --follow-new" or "journalctl -k -f -n 0 -o cat"); empty: Xid events are not watched',
    }),
    migHostAttach: Type.Boolean({
      default: false,
      description:
        "a MIG deployable is attached as its GPU instance, for consumers on the host itself; off: its bind makes the profile's MIG-backed vGPU (an mdev on a VF) for a VM",
    }),
    pciIds: Type.String({
      default: '/usr/share/misc/pci.ids',
      description: 'the pci.ids file whose names are the GPUs\' model when nvidia-smi does not say; missing: "miss model info", as Cyborg',
    }),
    legacyTraits: Type.Boolean({
      default: false,
      description:
        'also report the traits Cyborg up to 10.0.0 gave NVIDIA GPUs (CUSTOM_GPU_NVIDIA, CUSTOM_GPU_PRODUCT_ID_<PID>), so that device profiles written for it keep matching',
    }),
  },
  { default: {} },
);

/** The FPGA drivers' programming tools (docs/drivers.md). */
export const fpgaSchema = Type.Object(
  {
    programCommand: Type.String({
      default: '',
      description: 'argv template (space-separated) with {address} {bus} {device} {function} {image}; empty: fpgaconf for Intel, xbmgmt program for Xilinx',
    }),
    programTimeoutMs: Type.Integer({ minimum: 1, default: 600_000, description: 'deadline of one programming' }),
    intelKnownIds: Type.Array(PCI_ID, {
      default: ['8086:09c4'],
      description: 'vendor:product of the Intel FPGA PFs the intel_fpga_driver reports (PAC Arria 10 GX by default; 8086:0b2b for a PAC D5005)',
    }),
  },
  { default: {} },
);

/** The NIC driver (Cyborg's `[nic_devices]` and a section per NIC type; docs/drivers.md). */
export const nicSchema = Type.Object(
  {
    enabledNicTypes: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'NIC types whose [<type>] section maps physical networks and functions onto interfaces',
    }),
    /** The `[<nic type>]` sections, by type: read from the dynamic sections, not from one option. */
    types: Type.Record(
      Type.String(),
      Type.Object({
        physicalDeviceMappings: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
        functionDeviceMappings: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
      }),
      { default: {} },
    ),
    knownIds: Type.Array(PCI_ID, {
      default: ['8086:158b', '8086:1572'],
      description: 'vendor:product of the NIC PFs the intel_nic_driver reports (X710 / XXV710 by default; 8086:1593 for an E810-C)',
    }),
  },
  { default: {} },
);

/** The QAT driver (ours: Cyborg's has no settings). */
export const qatSchema = Type.Object(
  {
    knownIds: Type.Array(PCI_ID, {
      default: ['8086:37c8'],
      description: 'vendor:product of the QAT PFs the intel_qat_driver reports (C62x by default; 8086:4940 for a QAT 4xxx)',
    }),
  },
  { default: {} },
);

/** The fake driver (the all-in-one's, and any agent that enables fake_driver). */
export const fakeSchema = Type.Object({
  gpus: Type.Integer({ minimum: 0, default: 2 }),
  nics: Type.Integer({ minimum: 0, default: 1 }),
  vfsPerNic: Type.Integer({ minimum: 0, default: 4 }),
  opDelayMs: Type.Integer({ minimum: 0, default: 0 }),
});

/**
 * Cyborg's record of a Xilinx Alveo U280/U50 mapped onto ours (docs/adopt.md). Cyborg's
 * xilinx_fpga_driver keeps only the lspci lines reading "Xilinx Corporation Device" and
 * "Processing accelerators": where pci.ids names the card's management function (`.0`) it sees
 * the user function (`.1`) alone, and names the deployable after it, with that one attach handle.
 * Our driver reads sysfs, sees both functions of the slot and names the card after `.0` with two
 * handles. The adopted record is ours — name, both handles, the control path of `.0` — and keeps
 * the provider Cyborg made (uuid3 of the `.1` name), under which Nova's allocations are: no
 * provider is deleted or created at the cut-over.
 */

/** One handle of the adopted deployable: Cyborg's row where it had one, or the management function's. */
export interface MappedHandle {
  attachType: 'PCI';
  attachInfo: string;
  inUse: boolean;
  /** Cyborg's attach_handles row id; none for the `.0` handle Cyborg never recorded. */
  cyborgId?: number;
}

export interface XilinxMapping {
  /** Our deployable name: the host's prefix with the `.0` address. */
  name: string;
  /** The control path of the management function (our device's id derives from it). */
  cpidInfo: string;
  handles: MappedHandle[];
}

const USER_FUNCTION = /"function": "1"/;

/**
 * The mapping of a Cyborg Xilinx deployable named after a `.1` function with that function's
 * one PCI handle; undefined for any other shape (a card Cyborg saw whole is named as ours).
 */
export function xilinxUserOnly(name: string, handles: readonly { id: number; type: string; info: string; inUse: boolean }[]): XilinxMapping | undefined {
  const h = handles[0];
  if (!/\.1$/.test(name) || handles.length !== 1 || h?.type !== 'PCI' || !USER_FUNCTION.test(h.info)) return undefined;
  const mgmt = h.info.replace(USER_FUNCTION, '"function": "0"');
  return {
    name: name.replace(/\.1$/, '.0'),
    cpidInfo: mgmt,
    handles: [
      { attachType: 'PCI', attachInfo: mgmt, inUse: false },
      { attachType: 'PCI', attachInfo: h.info, inUse: h.inUse, cyborgId: h.id },
    ],
  };
}

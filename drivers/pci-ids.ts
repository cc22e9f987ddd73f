import { readFileSync } from 'node:fs';

/**
 * Product names of one vendor from a pci.ids file (the PCI ID Repository's format, what lspci
 * reads: a vendor line `10de  NVIDIA Corporation`, then its devices indented by one tab,
 * `\t2331  GH100 [H100 PCIe]`; subsystems by two tabs). The model a driver reports when its own
 * tool does not say. A missing or unreadable file gives no names: the model stays unknown.
 */
export function productNames(path: string | undefined, vendorId: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!path) return out;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return out;
  }
  const vendor = vendorId.toLowerCase();
  let inVendor = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    if (!line.startsWith('\t')) {
      if (inVendor) break;
      inVendor = line.slice(0, 4).toLowerCase() === vendor;
      continue;
    }
    if (!inVendor || line.startsWith('\t\t')) continue;
    const m = /^\t([0-9a-fA-F]{4})\s+(.+)$/.exec(line);
    if (m) out.set(m[1]!.toLowerCase(), m[2]!.trim());
  }
  return out;
}

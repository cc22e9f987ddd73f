import { stableId } from '../../ids/index.js';
import type { Discovery } from './discover.js';
import type { MdevType, PciFunction } from './sysfs.js';
import type { BackendService } from '../../model/index.js';

/** What has been programmed on a card, by device uuid (the generic driver remembers it). */
export type Programmed = Map<string, { bitstreamId?: string; functionId?: string }>;

/**
 * The services of every reported card: each enabled virtual function, each mediated-device type
 * (of the card and of its VFs), the programmed function, and whole-card passthrough for cards
 * that are assigned whole.
 */
export function servicesOf(host: string, discovery: Discovery, functions: PciFunction[], programmed: Programmed): BackendService[] {
  const byAddr = new Map(functions.map((f) => [f.address, f]));
  const out: BackendService[] = [];
  for (const device of discovery.devices) {
    const pfAddr = [...discovery.where.values()].find((w) => w.device === device)?.pf;
    const pf = pfAddr ? byAddr.get(pfAddr) : undefined;
    if (!pf) continue;
    const svc = (kind: BackendService['kind'], name: string, rest: Partial<BackendService> & { details: Record<string, string> }): void => {
      out.push({
        id: stableId(host, 'service', pf.address, kind, name, rest.details.parent ?? ''),
        deviceUuid: device.uuid,
        address: pf.address,
        kind,
        name,
        ...rest,
      });
    };
    pf.virtfns.forEach((vfAddr, index) => {
      const vf = byAddr.get(vfAddr);
      svc('vf', vfAddr, {
        details: { index: String(index), product_id: `0x${vf?.productId ?? ''}`, driver: vf?.driver ?? '', iommu_group: vf?.iommuGroup ?? '' },
      });
    });
    const parents = [pf, ...pf.virtfns.map((a) => byAddr.get(a)).filter((v): v is PciFunction => v !== undefined)];
    for (const parent of parents) {
      for (const t of parent.mdevTypes) svc('mdev_type', t.id, mdevService(t, parent.address));
    }
    const prog = programmed.get(device.uuid);
    if (prog)
      svc('function', prog.functionId ?? prog.bitstreamId ?? 'programmed', {
        details: { bitstream_id: prog.bitstreamId ?? '', function_id: prog.functionId ?? '' },
      });
    if (pf.virtfns.length === 0 && pf.mdevTypes.length === 0) {
      svc('passthrough', pf.address, { details: { driver: pf.driver ?? '', iommu_group: pf.iommuGroup ?? '' } });
    }
  }
  return out;
}

function mdevService(t: MdevType, parent: string): Partial<BackendService> & { details: Record<string, string> } {
  return {
    available: t.availableInstances,
    total: t.availableInstances + t.devices.length,
    details: { parent, name: t.name, description: t.description, device_api: t.deviceApi },
  };
}

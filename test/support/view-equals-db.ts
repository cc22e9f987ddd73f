import type { AcceleratorView, ArqView } from '../../model/index.js';
import { query } from './database.js';

/** What an api shows: the in-process conductor, a RemoteControlPlane's read model, or rows read over HTTP. */
export interface ApiView {
  listAccelerators(): AcceleratorView[];
  listArqs(): ArqView[];
}

type AccRow = { id: string; host: string; state: string; context: { allocations?: { instanceUuid?: string; arqUuid?: string }[] } };
type ArqRow = { uuid: string; state: string };

/**
 * Where the api's view and the database disagree, as lines a person reads (empty when they
 * agree): each accelerator's host, state and allocations, each ARQ's presence and Cyborg state.
 * What a fault story checks at its end — after a fault the view must have resynced, not drifted.
 */
export async function viewDiffersFromDb(view: ApiView, databaseUrl: string): Promise<string[]> {
  const [accRows, arqRows] = await Promise.all([
    query<AccRow>(databaseUrl, 'select id, host, state, context from accelerators'),
    query<ArqRow>(databaseUrl, 'select uuid, state from extended_accelerator_requests'),
  ]);
  const out: string[] = [];
  const accs = new Map(view.listAccelerators().map((a) => [a.id, a]));
  for (const row of accRows) {
    const a = accs.get(row.id);
    accs.delete(row.id);
    if (!a) {
      out.push(`accelerator ${row.id} (${row.state}) is in the database, not in the view`);
      continue;
    }
    if (a.host !== row.host) out.push(`accelerator ${row.id}: host ${a.host} in the view, ${row.host} in the database`);
    if (a.state !== row.state) out.push(`accelerator ${row.id}: ${a.state} in the view, ${row.state} in the database`);
    const held = row.context.allocations?.length ?? 0;
    if (a.allocations.length !== held) out.push(`accelerator ${row.id}: ${a.allocations.length} allocations in the view, ${held} in the database`);
  }
  for (const id of accs.keys()) out.push(`accelerator ${id} is in the view, not in the database`);
  const arqs = new Map(view.listArqs().map((a) => [a.uuid, a]));
  for (const row of arqRows) {
    const a = arqs.get(row.uuid);
    arqs.delete(row.uuid);
    if (!a) {
      out.push(`ARQ ${row.uuid} (${row.state}) is in the database, not in the view`);
      continue;
    }
    if (a.cyborgState !== row.state) out.push(`ARQ ${row.uuid}: ${a.cyborgState} in the view, ${row.state} in the database`);
  }
  for (const uuid of arqs.keys()) out.push(`ARQ ${uuid} is in the view, not in the database`);
  return out;
}

/**
 * Allocations the database holds for ARQs that are gone or no longer bound to them: a leak
 * (the device stays taken while nobody uses it). Allocations made outside ARQs (an operator's
 * attach) carry no ARQ and are not counted.
 */
export async function leakedAllocations(databaseUrl: string): Promise<string[]> {
  const [accRows, arqRows] = await Promise.all([
    query<AccRow>(databaseUrl, 'select id, host, state, context from accelerators'),
    query<ArqRow>(databaseUrl, 'select uuid, state from extended_accelerator_requests'),
  ]);
  const stateOf = new Map(arqRows.map((r) => [r.uuid, r.state]));
  const live = (uuid: string): boolean => ['Bound', 'BindStarted'].includes(stateOf.get(uuid) ?? '');
  return accRows.flatMap((r) =>
    (r.context.allocations ?? [])
      .filter((al) => al.arqUuid !== undefined && !live(al.arqUuid))
      .map((al) => `accelerator ${r.id} (${r.state}) holds an allocation of ARQ ${al.arqUuid}, which is ${stateOf.get(al.arqUuid!) ?? 'gone'}`),
  );
}

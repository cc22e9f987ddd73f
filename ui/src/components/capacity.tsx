import { useMemo } from 'preact/hooks';
import { capacityOf, type CapacityCounts } from '../../../model/index.js';
import type { AcceleratorView } from '../types.js';

/**
 * Free capacity at a glance, for the fleet or the host the list is narrowed to: attach slots by
 * resource class — total, used, reserved (of which quarantined, in maintenance) and free —
 * counted from the committed views by the same function as `GET /cyborg/v1/capacity`
 * (model/capacity.ts), so the page and the API never disagree.
 */
export function CapacityPanel({ accelerators, host: filter }: { accelerators: Iterable<AcceleratorView>; host: string | null }) {
  // The host filter reads '' for "any host".
  const host = filter ? filter : null;
  const cap = useMemo(() => capacityOf(accelerators), [accelerators]);
  const rows: CapacityCounts[] = host ? (cap.hosts.find((h) => h.host === host)?.classes ?? []) : cap.fleet;
  const sum = (k: 'total' | 'free'): number => rows.reduce((n, r) => n + r[k], 0);
  return (
    <details class="capacity" data-testid="capacity" data-scope={host ?? 'fleet'}>
      <summary>
        capacity <span class="muted">{host ?? 'fleet'}</span> · <b data-testid="capacity-free">{sum('free')}</b> free of {sum('total')} slots
      </summary>
      {rows.length === 0 ? (
        <p class="muted">no accelerator with a resource class here</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>resource class</th>
              <th>total</th>
              <th>used</th>
              <th>reserved</th>
              <th>quarantined</th>
              <th>maintenance</th>
              <th>free</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.resourceClass} data-rc={r.resourceClass}>
                <td>{r.resourceClass}</td>
                <td>{r.total}</td>
                <td>{r.used}</td>
                <td>{r.reserved}</td>
                <td class={r.quarantined > 0 ? 'warn' : ''}>{r.quarantined}</td>
                <td>{r.maintenance}</td>
                <td>
                  <b>{r.free}</b>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </details>
  );
}

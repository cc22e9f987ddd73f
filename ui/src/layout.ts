import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';
import { isDetourState } from '../../machines/index.js';
import type { MachineGraph } from './types.js';

export interface Point {
  x: number;
  y: number;
}

export interface ChartNode {
  id: string;
  x: number;
  y: number;
  width: number;
  height: number;
  tags: string[];
  transient: boolean;
  invokes: boolean;
  /** Stands for "any state": the source of events every state accepts (HOST_LOST). */
  any: boolean;
}

export interface ChartEdge {
  id: string;
  from: string;
  to: string;
  events: string[];
  guards: string[];
  /** Every event on it comes from the system (driver done or failed, host lost), none from an operator. */
  system: boolean;
  points: Point[];
  label: (Point & { width: number; height: number; text: string }) | null;
}

export interface ChartLayout {
  width: number;
  height: number;
  nodes: ChartNode[];
  edges: ChartEdge[];
}

/** The node that stands for every state, for events accepted (nearly) everywhere. */
export const ANY = '*';

const CHAR_W = 6.6;
const LABEL_H = 14;

interface Merged {
  from: string;
  to: string;
  events: string[];
  guards: string[];
  system: boolean;
}

/**
 * Turns a machine graph into drawable edges: one edge per (from, to) pair with its events joined,
 * and an event that leads to the same target from most states (HOST_LOST → offline) drawn once
 * from an "any state" node instead of a dozen times. Self-loops are left out (they change nothing
 * the chart shows).
 */
export function mergeTransitions(g: MachineGraph): Merged[] {
  const sources = new Map<string, Set<string>>();
  for (const t of g.transitions) {
    const k = `${t.event}→${t.to}`;
    const set = sources.get(k) ?? new Set<string>();
    set.add(t.from);
    sources.set(k, set);
  }
  const everywhere = new Set([...sources].filter(([, s]) => s.size >= Math.max(4, g.states.length / 2)).map(([k]) => k));
  const merged = new Map<string, Merged>();
  for (const t of g.transitions) {
    if (t.from === t.to) continue;
    const wide = everywhere.has(`${t.event}→${t.to}`);
    const from = wide ? ANY : t.from;
    const key = `${from}→${t.to}`;
    const m = merged.get(key) ?? { from, to: t.to, events: [], guards: [], system: true };
    if (t.operator) m.system = false;
    const ev = t.event || 'always';
    if (!m.events.includes(ev)) m.events.push(ev);
    if (t.guard) m.guards.push(`${ev} [${t.guard}]`);
    merged.set(key, m);
  }
  return [...merged.values()];
}

function nodeSize(id: string, transient: boolean): { width: number; height: number } {
  return transient ? { width: Math.max(70, id.length * 5.4 + 16), height: 22 } : { width: Math.max(84, id.length * 7.4 + 22), height: 30 };
}

/**
 * Whether an edge leaves the common path: into or out of a failure or a lost host's `offline`,
 * or one of the "any state" events (HOST_LOST). Folded until asked for.
 */
export function isDetour(e: Pick<Merged, 'from' | 'to'>): boolean {
  return e.from === ANY || isDetourState(e.from) || isDetourState(e.to);
}

/** How many merged edges the folded chart leaves out. */
export function detourCount(g: MachineGraph): number {
  return mergeTransitions(g).filter(isDetour).length;
}

const cache = new Map<string, Promise<ChartLayout>>();

/**
 * Lays a machine out with ELK (layered, top-down), once per machine and mode: every accelerator
 * shares it. `folded`: the common path alone — every state drawn, but the detours' edges left
 * out, so the lifecycle reads top-down at a glance.
 */
export function layoutMachine(g: MachineGraph, folded = false): Promise<ChartLayout> {
  const key = `${g.id}${folded ? ':folded' : ''}`;
  let p = cache.get(key);
  if (!p) {
    p = compute(g, folded);
    cache.set(key, p);
  }
  return p;
}

async function compute(g: MachineGraph, folded: boolean): Promise<ChartLayout> {
  // ELK is big (1.6 MB): loaded only when the first chart is drawn.
  const { default: ELK } = await import('elkjs/lib/elk.bundled.js');
  const edges = mergeTransitions(g).filter((e) => !folded || !isDetour(e));
  const hasAny = edges.some((e) => e.from === ANY);
  const states = [
    ...g.states.map((s) => ({ ...s, any: false })),
    ...(hasAny ? [{ id: ANY, type: 'atomic', tags: [], transient: false, invokes: [], any: true }] : []),
  ];
  const labelText = (e: Merged): string => (e.from === ANY ? `${e.events.join(' / ')} (any state)` : e.events.join(' / '));
  const graph: ElkNode = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.edgeRouting': 'ORTHOGONAL',
      'elk.layered.spacing.nodeNodeBetweenLayers': '26',
      'elk.layered.spacing.edgeNodeBetweenLayers': '10',
      'elk.layered.spacing.edgeEdgeBetweenLayers': '6',
      'elk.spacing.nodeNode': '18',
      'elk.spacing.edgeLabel': '2',
      'elk.spacing.edgeEdge': '6',
      'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
      // The machine lists its states in lifecycle order: keep that order top-down, so cycles are
      // broken where the lifecycle goes back (retry, detach, host back), not at random.
      'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
      'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
      'elk.edgeLabels.inline': 'true',
    },
    children: states.map((s) => ({ id: s.id, ...nodeSize(s.any ? 'any state' : s.id, s.transient) })),
    edges: edges.map((e, i): ElkExtendedEdge => {
      const text = labelText(e);
      return { id: `e${i}`, sources: [e.from], targets: [e.to], labels: [{ id: `l${i}`, text, width: text.length * CHAR_W, height: LABEL_H }] };
    }),
  };
  const out: ElkNode = await new ELK().layout(graph);
  const pos = new Map((out.children ?? []).map((c) => [c.id, c]));
  const nodes: ChartNode[] = states.map((s) => {
    const c = pos.get(s.id);
    return {
      id: s.id,
      x: c?.x ?? 0,
      y: c?.y ?? 0,
      width: c?.width ?? 80,
      height: c?.height ?? 30,
      tags: s.tags,
      transient: s.transient,
      invokes: s.invokes.length > 0,
      any: s.any,
    };
  });
  const chartEdges: ChartEdge[] = (out.edges ?? []).map((oe, i) => {
    const e = edges[i]!;
    const sec = oe.sections?.[0];
    const points = sec ? [sec.startPoint, ...(sec.bendPoints ?? []), sec.endPoint] : [];
    const l = oe.labels?.[0];
    return {
      id: oe.id,
      from: e.from,
      to: e.to,
      events: e.events,
      guards: e.guards,
      system: e.system,
      points,
      label: l ? { x: l.x ?? 0, y: l.y ?? 0, width: l.width ?? 0, height: l.height ?? LABEL_H, text: l.text ?? '' } : null,
    };
  });
  return { width: out.width ?? 400, height: out.height ?? 400, nodes, edges: chartEdges };
}

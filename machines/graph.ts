import type { AnyStateMachine } from 'xstate';

/** One state of a machine as the visualizer draws it. */
export interface GraphState {
  id: string;
  type: string;
  tags: string[];
  /** Eventless: the machine passes through it at once (`always` transitions only). */
  transient: boolean;
  /** The effects it runs while in it: an invoked actor (a bind) or one started on entry (a driver operation). */
  invokes: string[];
}

/** One transition: `event` is the operator / system event, or what XState raised (done, failed, after …). */
export interface GraphTransition {
  from: string;
  to: string;
  event: string;
  guard?: string;
  /** Sent by an operator (REST, CLI, the page), rather than by the system itself. */
  operator: boolean;
}

export interface MachineGraph {
  id: string;
  initial: string | null;
  states: GraphState[];
  transitions: GraphTransition[];
}

interface NodeLike {
  key: string;
  type: string;
  tags: string[];
  states: Record<string, NodeLike>;
  transitions: Map<string, TransitionLike[]>;
  always?: TransitionLike[];
  invoke: { src: unknown }[];
  entry: (string | { type?: unknown })[];
  initial?: { target: { key: string }[] };
}

interface TransitionLike {
  target?: { key: string }[];
  guard?: unknown;
}

/**
 * Walks a machine's own state nodes (not a copy of its shape kept elsewhere) into a plain graph
 * the page can lay out: so the chart always matches the code that runs. Only the top level is
 * walked, which is all our machines use; targetless transitions (ignored events) are left out.
 */
export function machineGraph(machine: AnyStateMachine, operatorEvents: readonly string[] = []): MachineGraph {
  const ops = new Set(operatorEvents);
  const root = machine.root as unknown as NodeLike;
  const states: GraphState[] = [];
  const transitions: GraphTransition[] = [];
  for (const node of Object.values(root.states)) {
    const always = node.always ?? [];
    states.push({
      id: node.key,
      type: node.type,
      tags: [...node.tags],
      transient: always.length > 0 && [...node.transitions.keys()].every((e) => RECOVERY.has(e)),
      invokes: [...node.invoke.map((i) => String(i.src)), ...node.entry.map((a) => (typeof a === 'string' ? a : String(a.type))).filter((t) => EFFECTS.has(t))],
    });
    for (const [event, list] of node.transitions) {
      if (RECOVERY.has(event)) continue;
      for (const t of list) add(transitions, node.key, t, eventLabel(event), ops.has(event));
    }
    for (const t of always) add(transitions, node.key, t, '', false);
  }
  return { id: machine.id, initial: root.initial?.target[0]?.key ?? null, states, transitions };
}

function add(out: GraphTransition[], from: string, t: TransitionLike, event: string, operator: boolean): void {
  const to = t.target?.[0]?.key;
  if (!to) return;
  const g = guardLabel(t.guard);
  out.push(g ? { from, to, event, guard: g, operator } : { from, to, event, operator });
}

/**
 * The conductor's own recovery events (a crash's INTERRUPTED, reconciliation's RECONCILE): edges
 * the machine tests walk, not the lifecycle an operator reads, so the chart leaves them out.
 */
const RECOVERY = new Set(['INTERRUPTED', 'RECONCILE']);

/** Entry actions that start an effect whose outcome comes back as an event (machines/accelerator.ts). */
const EFFECTS = new Set(['runDriverOp']);

/** A driver operation's outcome, and XState's internal event names, as an operator would say them. */
export function eventLabel(event: string): string {
  if (event === 'OP_DONE') return 'done';
  if (event === 'OP_FAILED') return 'failed';
  if (event.startsWith('xstate.done.actor.')) return 'done';
  if (event.startsWith('xstate.error.actor.')) return 'failed';
  const after = /^xstate\.after\.([^.]+)\./.exec(event);
  if (after) return `after ${after[1]}`;
  return event;
}

/** Guards a chart leaves out: `isCurrentOp` only drops late outcomes and would sit on every done/failed edge. */
const UNDRAWN_GUARDS = new Set(['isCurrentOp']);

function guardLabel(guard: unknown): string | undefined {
  if (!guard || (typeof guard === 'string' && UNDRAWN_GUARDS.has(guard))) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && 'type' in guard) {
    const { type, params } = guard as { type: unknown; params?: Record<string, unknown> };
    const args = params
      ? Object.entries(params)
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(', ')
      : '';
    return args ? `${String(type)}(${args})` : String(type);
  }
  return 'guarded';
}

import { useEffect, useRef, useState } from 'preact/hooks';
import { isDetourState } from '../../../machines/index.js';
import { ANY, detourCount, layoutMachine, type ChartEdge, type ChartLayout } from '../layout.js';
import type { MachineGraph } from '../types.js';

export interface StatechartProps {
  graph: MachineGraph;
  /** The state to highlight. */
  current: string;
  /** Operator events accepted now: their edges out of `current` are drawn as available. */
  allowed: string[];
  /** The last step taken, drawn as the way the accelerator came. */
  last?: { from: string; to: string } | undefined;
}

/**
 * The machine's statechart, laid out from its definition (served by the API), with the current
 * state filled, the transitions allowed now in the accent colour and the last step marked.
 */
export function Statechart(props: StatechartProps) {
  const [layout, setLayout] = useState<ChartLayout | null>(null);
  const [error, setError] = useState('');
  const [big, setBig] = useState(false);
  const [asked, setAsked] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  const { graph, current } = props;
  // The detours (failures, a lost host) are folded until asked for, or until the device is on one.
  const folded = !asked && !isDetourState(current);
  const detours = detourCount(graph);
  useEffect(() => {
    let live = true;
    layoutMachine(graph, folded).then(
      (l) => live && setLayout(l),
      (err: unknown) => live && setError(String(err)),
    );
    return () => {
      live = false;
    };
  }, [graph, folded]);
  // Keep the current state in view inside the scrolled box.
  useEffect(() => {
    const el = box.current;
    const n = layout?.nodes.find((x) => x.id === current);
    if (!el || !n || !layout) return;
    const scale = el.scrollWidth / (layout.width + 12);
    el.scrollTo({ left: (n.x + n.width / 2) * scale - el.clientWidth / 2, top: (n.y + n.height / 2) * scale - el.clientHeight / 2 });
  }, [layout, current]);
  if (error) return <p class="error">cannot lay the chart out: {error}</p>;
  if (!layout) return <p class="muted">laying out the {graph.id} machine…</p>;
  return (
    <>
      {detours > 0 && !isDetourState(current) && (
        <button type="button" class="link fold" data-testid="chart-fold" data-folded={folded ? 'true' : 'false'} onClick={() => setAsked(!asked)}>
          {folded ? `+ ${detours} error and offline transitions` : 'fold error and offline transitions'}
        </button>
      )}
      <div class="chart-box" ref={box}>
        <button type="button" class="enlarge" onClick={() => setBig(true)} title="show the whole machine">
          ⤢
        </button>
        <Svg {...props} layout={layout} scale={0.8} testId={`chart-${graph.id}`} />
      </div>
      {big && (
        <div class="overlay" onClick={() => setBig(false)}>
          <div class="chart-big" onClick={(e) => e.stopPropagation()}>
            <button type="button" class="enlarge" onClick={() => setBig(false)} title="close">
              ✕
            </button>
            <Svg {...props} layout={layout} scale={1} testId={`chart-${graph.id}-big`} />
          </div>
        </div>
      )}
    </>
  );
}

function Svg({ graph, current, allowed, last, layout, scale, testId }: StatechartProps & { layout: ChartLayout; scale: number; testId: string }) {
  const pad = 6;
  const open = (e: ChartEdge): boolean => (e.from === current || e.from === ANY) && e.events.some((ev) => allowed.includes(ev));
  const came = (e: ChartEdge): boolean => last !== undefined && e.to === last.to && (e.from === last.from || e.from === ANY) && last.to === current;
  return (
    <svg
      class="chart"
      data-testid={testId}
      data-current={current}
      data-edges={layout.edges.length}
      viewBox={`${-pad} ${-pad} ${layout.width + 2 * pad} ${layout.height + 2 * pad}`}
      width={(layout.width + 2 * pad) * scale}
      height={(layout.height + 2 * pad) * scale}
      role="img"
      aria-label={`${graph.id} statechart, current state ${current}`}
    >
      <defs>
        {['plain', 'open', 'came'].map((k) => (
          <marker key={k} id={`arrow-${k}`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class={`arrowhead ${k}`} />
          </marker>
        ))}
      </defs>
      {layout.edges.map((e) => {
        const kind = came(e) ? 'came' : open(e) ? 'open' : 'plain';
        return (
          <g key={e.id} class={`edge ${kind} ${e.system ? 'system' : ''}`} data-from={e.from} data-to={e.to}>
            <title>{`${e.from === ANY ? 'any state' : e.from} → ${e.to}: ${e.events.join(', ')}${e.guards.length ? `\n${e.guards.join('\n')}` : ''}`}</title>
            <polyline points={e.points.map((p) => `${p.x},${p.y}`).join(' ')} marker-end={`url(#arrow-${kind})`} />
            {e.label && (
              <text x={e.label.x + e.label.width / 2} y={e.label.y + e.label.height - 3} text-anchor="middle">
                {e.label.text}
              </text>
            )}
          </g>
        );
      })}
      {layout.nodes.map((n) => {
        const cls = ['node', n.id === current ? 'current' : '', n.transient ? 'transient' : '', n.tags.includes('busy') ? 'busy' : '', n.any ? 'any' : ''].join(
          ' ',
        );
        return (
          <g key={n.id} class={cls} data-state={n.id} transform={`translate(${n.x},${n.y})`}>
            <title>{`${n.any ? 'any state' : n.id}${n.tags.length ? ` · tags: ${n.tags.join(', ')}` : ''}${n.invokes ? ' · runs a driver operation' : ''}`}</title>
            <rect width={n.width} height={n.height} rx={n.transient ? n.height / 2 : 6} />
            <text x={n.width / 2} y={n.height / 2 + 4} text-anchor="middle">
              {n.any ? 'any state' : n.id}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

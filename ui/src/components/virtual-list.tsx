import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export interface VirtualListProps<T> {
  items: T[];
  rowHeight: number;
  keyOf: (item: T) => string;
  render: (item: T) => ComponentChildren;
  class?: string;
  testId?: string;
}

/**
 * A scrolling list that renders only the rows in view (plus a few): 10,000 rows cost the DOM of
 * about forty. Rows have one fixed height, which is all this page needs, so the window is plain
 * arithmetic — no measuring library.
 */
export function VirtualList<T>(props: VirtualListProps<T>) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(800);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setHeight(el.clientHeight));
    ro.observe(el);
    setHeight(el.clientHeight);
    return () => ro.disconnect();
  }, []);
  const { items, rowHeight } = props;
  const overscan = 8;
  const start = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const end = Math.min(items.length, Math.ceil((scrollTop + height) / rowHeight) + overscan);
  const visible = items.slice(start, end);
  return (
    <div
      ref={ref}
      class={`vlist ${props.class ?? ''}`}
      data-testid={props.testId}
      onScroll={(e) => setScrollTop((e.currentTarget as HTMLDivElement).scrollTop)}
    >
      <div style={{ height: `${items.length * rowHeight}px`, position: 'relative' }}>
        {visible.map((item, i) => (
          <div key={props.keyOf(item)} class="vrow" style={{ top: `${(start + i) * rowHeight}px`, height: `${rowHeight}px` }}>
            {props.render(item)}
          </div>
        ))}
      </div>
    </div>
  );
}

/**
 * The events a snapshot accepts now, asked of the machine itself (never a hard-coded list).
 * `samples` gives each event type a representative payload for guards that read the event.
 */
export function allowedEvents<E extends { type: string }>(snapshot: { can(event: E): boolean }, samples: Record<string, E>): string[] {
  return Object.entries(samples)
    .filter(([, ev]) => snapshot.can(ev))
    .map(([type]) => type);
}

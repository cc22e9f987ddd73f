/**
 * Issue 42: the alerts and the metrics named a card by uuid only. Every shipped alert about one
 * accelerator now says its name and host in its summary (keeping the uuid for the command it
 * suggests), and every device series the all-in-one exposes carries `host` and `name` beside
 * `accelerator`, equal to what the fleet says of that card.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startCliTarget } from '../cli/harness.js';

interface Rule {
  alert?: string;
  expr: string;
  annotations?: { summary?: string; description?: string };
}

describe('alerts and metrics name a card by host and name beside its uuid', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  beforeAll(async () => {
    target = await startCliTarget('names-host');
  });
  afterAll(async () => {
    await target?.running.stop();
  });

  it('each shipped alert about one accelerator says its name and host, and the uuid for its command', async () => {
    const doc = parse(await readFile(new URL('../../deploy/prometheus/cyborg-alerts.yml', import.meta.url), 'utf8')) as { groups: { rules: Rule[] }[] };
    const perCard = doc.groups.flatMap((g) => g.rules).filter((r) => r.alert && /\bby \([^)]*\baccelerator\b/.test(r.expr));
    expect(perCard.map((r) => r.alert)).toEqual(expect.arrayContaining(['CyborgQuarantinedDeviceHeld', 'CyborgDeviceQuarantined', 'CyborgAcceleratorInError']));
    for (const r of perCard) {
      expect(r.expr, r.alert).toMatch(/\bby \([^)]*\bname\b/);
      expect(r.annotations?.summary, r.alert).toMatch(/\{\{ \$labels\.name \}\}.*\{\{ \$labels\.host \}\}/);
      expect(r.annotations?.description, r.alert).toContain('{{ $labels.accelerator }}');
    }
  });

  it("each device series of /metrics carries the card's host and name beside its uuid", async () => {
    const res = await fetch(`${target.url}/metrics`);
    const text = await res.text();
    const cards = new Map(target.running.conductor.listAccelerators().map((a) => [a.id, a]));
    const series = text.split('\n').filter((l) => l.startsWith('cyborg_') && l.includes('accelerator="'));
    expect(series.length).toBeGreaterThan(0);
    for (const line of series) {
      const label = (k: string): string | undefined => line.match(new RegExp(`[{,]${k}="([^"]*)"`))?.[1];
      const card = cards.get(label('accelerator')!);
      expect(card, line).toBeDefined();
      expect([label('host'), label('name')], line).toEqual([card!.host, card!.name]);
    }
  });
});

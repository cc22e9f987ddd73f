import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROTOCOL, ProtocolLevel, readProtocol, RELEASE } from './index.js';

describe('the release', () => {
  it('is the one package.json and CHANGELOG.md say', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(pkg.version).toBe(RELEASE);
    expect(readFileSync(new URL('../CHANGELOG.md', import.meta.url), 'utf8')).toMatch(new RegExp(`^## ${RELEASE.replace(/\./g, '\\.')} `, 'm'));
  });
});

describe('reading a message’s protocol', () => {
  it('takes the current and the previous; a message without a version is 0.1.0’s, protocol 1', () => {
    expect(readProtocol(String(PROTOCOL.current))).toEqual({ ok: true, version: PROTOCOL.current });
    expect(readProtocol(String(PROTOCOL.previous))).toEqual({ ok: true, version: PROTOCOL.previous });
    expect(readProtocol(undefined)).toEqual({ ok: true, version: 1 });
    expect(readProtocol('')).toEqual({ ok: true, version: 1 });
  });

  it('refuses one from the future, naming it and the way out', () => {
    const v = readProtocol('3');
    expect(v.ok).toBe(false);
    if (!v.ok) {
      expect(v.code).toBe('bus.protocol_unsupported');
      expect(v.message).toMatch(
        /protocol 3 is from a newer release: this cyborg 0\.2\.0 reads protocols 1–2; upgrade this role, or pin the sender with \[upgrade_levels\] protocol = 2/,
      );
    }
  });

  it('refuses a garbled one', () => {
    for (const raw of ['two', '2.0', '-1', '1e3', 'x'.repeat(100)]) {
      const v = readProtocol(raw);
      expect(v.ok, raw).toBe(false);
      if (!v.ok) expect(v.message).toMatch(/^garbled protocol version ".{0,42}: this cyborg 0\.2\.0 reads protocols 1–2/);
    }
  });

  it('refuses a sender two releases behind (a release whose window no longer holds protocol 1), naming the release to pass through', () => {
    const v = readProtocol(undefined, { current: 3, previous: 2 });
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.message).toMatch(/protocol 1 \(cyborg 0\.1\.0\) is 2 releases behind: .*upgrade the sender to 0\.2\.0 first/);
    const zero = readProtocol('0');
    expect(zero.ok).toBe(false);
  });
});

describe('choosing the protocol to speak', () => {
  const clock = (): { now: () => number; at: (t: number) => void } => {
    let t = 1_000_000;
    return { now: () => t, at: (x) => (t = x) };
  };
  const peer = (reads: number) => ({
    role: 'agent',
    host: 'h1',
    release: reads === 1 ? '0.1.0' : '0.2.0',
    reads,
    speaks: reads,
    via: 'cyborg.agent.heartbeat.h1',
  });

  it('speaks the older one while it listens after start and while an older peer is heard; moves up once none is left', () => {
    const c = clock();
    const level = new ProtocolLevel({ peerWindowMs: 3_000, now: c.now });
    expect(level.speaks()).toBe(1);
    c.at(1_003_000);
    expect(level.speaks()).toBe(2);
    level.heard(peer(1));
    expect(level.speaks()).toBe(1);
    expect(level.describe().olderPeers).toEqual(['agent h1 (0.1.0)']);
    c.at(1_005_000);
    level.heard(peer(2));
    expect(level.speaks()).toBe(2);
  });

  it('among a fleet of upgraded peers, one older peer holds it on the older protocol until it upgrades or its window passes', () => {
    const c = clock();
    const level = new ProtocolLevel({ peerWindowMs: 3_000, now: c.now });
    c.at(1_003_000);
    for (let i = 0; i < 5_000; i++) level.heard({ ...peer(2), host: `h${i}` });
    expect(level.speaks()).toBe(2);
    level.heard({ ...peer(1), host: 'h42' });
    expect(level.speaks()).toBe(1);
    level.heard({ ...peer(2), host: 'h42' }); // the same agent, upgraded: at once
    expect(level.speaks()).toBe(2);
    level.heard({ ...peer(1), host: 'h7' });
    expect(level.seen()).toHaveLength(4_096); // the newest kept
    c.at(1_005_999);
    expect(level.speaks()).toBe(1);
    c.at(1_006_000); // its window passed
    expect(level.speaks()).toBe(2);
  });

  it('a pin wins whatever the peers say', () => {
    const c = clock();
    const level = new ProtocolLevel({ peerWindowMs: 3_000, pin: 1, now: c.now });
    c.at(2_000_000);
    level.heard(peer(2));
    expect(level.speaks()).toBe(1);
    expect(level.describe()).toMatchObject({ release: RELEASE, speaks: 1, reads: [1, 2], pinned: 1 });
  });
});

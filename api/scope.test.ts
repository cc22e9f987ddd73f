import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../errors/index.js';
import type { AcceleratorView, ArqView, ControlPlane, TransitionRecord } from '../model/index.js';
import { CYBORG_RULES, Enforcer } from '../policy/index.js';
import { EventScope, projectScope, scopeOf } from './scope.js';
import { authSettings } from './v2/index.js';
import type { Identity } from './auth/index.js';

// Casts: only the fields the scope reads matter here, and the views grow fields over time.
const card = (allocations: AcceleratorView['allocations']): AcceleratorView =>
  ({
    id: 'acc-1',
    name: 'fpga',
    host: 'h1',
    deviceUuid: 'd',
    deviceType: 'FPGA',
    vendor: 'v',
    model: 'm',
    driver: 'fake',
    resourceClass: 'FPGA',
    traits: [],
    rpUuid: 'rp',
    capacity: 16,
    state: 'attached',
    tags: [],
    allowed: [],
    allocations,
    program: null,
    error: null,
    missing: false,
    generation: 1,
    updatedAt: '',
    maintenance: {
      mark: 'draining',
      scopes: ['device'],
      since: null,
      consumers: allocations.map((a) => ({ instanceUuid: a.instanceUuid, ...(a.projectId ? { projectId: a.projectId } : {}) })),
    },
  }) as unknown as AcceleratorView;
const arq = (uuid: string, projectId: string): ArqView =>
  ({
    uuid,
    deviceProfileName: 'dp',
    deviceProfileGroupId: 0,
    projectId,
    binding: null,
    boundTo: null,
    error: null,
    state: 'Initial',
    cyborgState: 'Initial',
    allowed: [],
    createdAt: '',
    updatedAt: '',
  }) as unknown as ArqView;

/** A conductor's reads over a fixed fleet: one card both projects hold a slot of, an ARQ each. */
function fleet(): { control: ControlPlane; views: { accelerators: AcceleratorView[]; arqs: ArqView[] } } {
  const views = {
    accelerators: [
      card([
        { handleUuid: 'h-a', instanceUuid: 'inst-a', projectId: 'proj-a' },
        { handleUuid: 'h-b', instanceUuid: 'inst-b', projectId: 'proj-b' },
      ]),
    ],
    arqs: [arq('arq-a', 'proj-a'), arq('arq-b', 'proj-b')],
  };
  const control = {
    listAccelerators: () => views.accelerators,
    listArqs: () => views.arqs,
    getAccelerator: (id: string) =>
      views.accelerators.find((a) => a.id === id) ??
      (() => {
        throw new NotFoundError('accelerator.not_found', id);
      })(),
    getArq: (uuid: string) =>
      views.arqs.find((a) => a.uuid === uuid) ??
      (() => {
        throw new NotFoundError('arq.not_found', uuid);
      })(),
  } as unknown as ControlPlane;
  return { control, views };
}

const event = (kind: TransitionRecord['kind'], id: string, projectId: string): TransitionRecord => ({
  kind,
  id,
  event: 'BIND',
  from: 'Initial',
  to: 'BindStarted',
  at: '',
  actor: `user-of-${projectId}`,
  actorName: 'someone',
  projectId,
  projectName: projectId,
  requestId: 'req-x',
  reason: 'why',
});

describe('what a project sees of the fleet (api/scope.ts)', () => {
  it("a shared card shows project B its own allocation and consumer only; B's ARQs only", () => {
    const b = projectScope('proj-b');
    const { views } = fleet();
    const seen = b.accelerator(views.accelerators[0]!)!;
    expect(seen.allocations.map((a) => a.instanceUuid)).toEqual(['inst-b']);
    expect(seen.maintenance?.consumers.map((c) => c.instanceUuid)).toEqual(['inst-b']);
    expect(views.arqs.flatMap((a) => b.arq(a) ?? []).map((a) => a.uuid)).toEqual(['arq-b']);
    expect(projectScope('proj-c').accelerator(views.accelerators[0]!)).toBeUndefined();
    // A token scoped to no project sees nothing.
    expect(projectScope(null).arq(arq('x', 'proj-b'))).toBeUndefined();
  });

  it("the audit of a project is its own rows, asked for by id or by name; another project's is nothing", () => {
    const b = projectScope('proj-b', 'other');
    expect(b.audit({ limit: 10 })).toEqual({ limit: 10, projectId: 'proj-b' });
    expect(b.audit({ limit: 10 }, 'other')).toEqual({ limit: 10, projectId: 'proj-b' });
    expect(b.audit({ limit: 10 }, 'proj-a')).toBeUndefined();
  });

  it('an accelerator B does not hold does not exist for B; an ARQ of A has no history for B', () => {
    const { control, views } = fleet();
    views.accelerators[0]!.allocations = views.accelerators[0]!.allocations.filter((a) => a.projectId === 'proj-a');
    expect(() => projectScope('proj-b').requireAccelerator(control, 'acc-1')).toThrow(NotFoundError);
    expect(projectScope('proj-b').seesHistoryOf(control, 'arq-a')).toBe(false);
    expect(projectScope('proj-b').seesHistoryOf(control, 'arq-b')).toBe(true);
  });

  it("the stream sends B its ARQs' events and the shared card's, the latter without who did it for A", () => {
    const { control, views } = fleet();
    const stream = new EventScope(projectScope('proj-b'), control);
    expect(stream.event(event('arq', 'arq-a', 'proj-a'))).toBeUndefined();
    expect(stream.event(event('arq', 'arq-b', 'proj-b'))).toMatchObject({ actor: 'user-of-proj-b', projectId: 'proj-b' });
    expect(stream.event(event('accelerator', 'acc-1', 'proj-a'))).toEqual({
      kind: 'accelerator',
      id: 'acc-1',
      event: 'BIND',
      from: 'Initial',
      to: 'BindStarted',
      at: '',
    });
    expect(stream.event(event('host', 'h1', 'proj-b'))).toBeUndefined();
    // B's ARQ deleted: B hears that it went (once), nobody else's deletions.
    views.arqs = views.arqs.filter((a) => a.uuid !== 'arq-b');
    expect(stream.event(event('arq', 'arq-b', 'proj-b'))).toBeDefined();
    expect(stream.event(event('arq', 'arq-b', 'proj-b'))).toBeUndefined();
    expect(stream.arq(null)).toBeNull();
  });

  it('policy.yaml decides who reads the fleet: by default an admin or a system reader; an override widens it', () => {
    const reader: Identity = {
      userId: 'u',
      projectId: 'proj-b',
      roles: new Set(['reader']),
      serviceRoles: new Set(),
      isAdmin: false,
      systemScoped: false,
      source: 'keystone',
    };
    const systemReader: Identity = { ...reader, projectId: null, systemScoped: true };
    const req = (identity: Identity, policyFile?: string) =>
      ({
        identity,
        server: {
          cyborgAuth: {
            ...authSettings({}),
            enforcer: new Enforcer(CYBORG_RULES, { enforceNewDefaults: false, enforceScope: true, ...(policyFile ? { policyFile } : {}) }),
          },
        },
      }) as unknown as Parameters<typeof scopeOf>[0];
    expect(scopeOf(req(reader)).fleet).toBe(false);
    expect(scopeOf(req(systemReader)).fleet).toBe(true);
    const file = join(mkdtempSync(join(tmpdir(), 'scope-')), 'policy.yaml');
    writeFileSync(file, '"cyborg:operator:scope:fleet": "role:reader"\n');
    expect(scopeOf(req(reader, file)).fleet).toBe(true);
  });
});

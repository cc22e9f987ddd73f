import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { ErrorSchema, Uuid } from './shared.js';
import { AcceleratorUsageSchema, HostUsageSchema, type AcceleratorView, type ControlPlane } from '../../model/index.js';
import { Name } from '../bounds.js';
import { policy } from '../auth/index.js';
import { scopeOf } from '../scope.js';

const CountsSchema = Type.Record(Type.String(), Type.Integer());

/** What one project holds: accelerators allocated to its instances, by device type and resource class. */
export const ProjectSummarySchema = Type.Object({
  projectId: Type.String(),
  projectName: Type.Optional(Type.String({ description: "Keystone's name of the project (keystone mode), where it knows it" })),
  accelerators: Type.Integer({ description: 'accelerators holding at least one allocation of the project' }),
  allocations: Type.Integer(),
  instances: Type.Array(Type.String()),
  byDeviceType: CountsSchema,
  byResourceClass: CountsSchema,
});
type ProjectSummary = Static<typeof ProjectSummarySchema>;

/** Per project, what its instances hold now, from the committed views (one pass over the fleet). */
export function projectSummaries(accelerators: Iterable<AcceleratorView>): ProjectSummary[] {
  const byProject = new Map<string, ProjectSummary & { seen: Set<string>; instanceSet: Set<string> }>();
  for (const a of accelerators) {
    for (const al of a.allocations) {
      const projectId = al.projectId ?? '';
      let p = byProject.get(projectId);
      if (!p)
        byProject.set(
          projectId,
          (p = { projectId, accelerators: 0, allocations: 0, instances: [], byDeviceType: {}, byResourceClass: {}, seen: new Set(), instanceSet: new Set() }),
        );
      p.allocations++;
      p.instanceSet.add(al.instanceUuid);
      if (p.seen.has(a.id)) continue;
      p.seen.add(a.id);
      p.accelerators++;
      p.byDeviceType[a.deviceType] = (p.byDeviceType[a.deviceType] ?? 0) + 1;
      const rc = a.resourceClass ?? 'none';
      p.byResourceClass[rc] = (p.byResourceClass[rc] ?? 0) + 1;
    }
  }
  return [...byProject.values()]
    .map(({ seen: _seen, instanceSet, ...p }) => ({ ...p, instances: [...instanceSet].sort() }))
    .sort((x, y) => x.projectId.localeCompare(y.projectId));
}

/**
 * Usage telemetry (the conductor's bounded in-memory window per accelerator) and the per-project
 * summary of what is allocated.
 */
export const usageRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.get(
    '/accelerators/:id/usage',
    {
      onRequest: policy('cyborg:operator:usage:get'),
      schema: {
        tags: ['operator'],
        summary: 'Recent usage samples of one accelerator, oldest first (utilisation, memory, temperature, power where measured)',
        params: Type.Object({ id: Uuid }),
        response: { 200: AcceleratorUsageSchema, 400: ErrorSchema, 404: ErrorSchema, 503: ErrorSchema, 504: ErrorSchema },
      },
    },
    async (req) => {
      scopeOf(req).requireAccelerator(control, req.params.id);
      return control.acceleratorUsage(req.params.id);
    },
  );

  app.get(
    '/hosts/:name/usage',
    {
      onRequest: policy('cyborg:operator:usage:get'),
      schema: {
        tags: ['operator'],
        summary: "Recent usage samples of a host's accelerators (those that reported any)",
        params: Type.Object({ name: Name() }),
        response: { 200: HostUsageSchema, 400: ErrorSchema, 404: ErrorSchema, 503: ErrorSchema, 504: ErrorSchema },
      },
    },
    async (req) => scopeOf(req).hostUsage(control, await control.hostUsage(req.params.name)),
  );

  app.get(
    '/projects',
    {
      onRequest: policy('cyborg:operator:project:get'),
      schema: {
        tags: ['operator'],
        summary: 'Per project: the accelerators its instances hold, by device type and resource class (a project-scoped caller: its own project only)',
        response: { 200: Type.Object({ projects: Type.Array(ProjectSummarySchema) }) },
      },
    },
    async (req) => {
      const scope = scopeOf(req);
      const projects = projectSummaries(control.listAccelerators().flatMap((a) => scope.accelerator(a) ?? []));
      const names = (await req.server.names?.projectNames(projects.map((p) => p.projectId))) ?? {};
      return { projects: projects.map((p) => (names[p.projectId] ? { ...p, projectName: names[p.projectId] } : p)) };
    },
  );
};

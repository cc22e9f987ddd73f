import { Type, type Static } from '@sinclair/typebox';
import type { Binding } from '../../machines/index.js';
import { needsVersion, patchError, v2Error } from './errors.js';
import { isUuid } from './format.js';
import type { Identity } from '../auth/index.js';
import { atLeast, type Microversion } from './microversion.js';
import { isStorable, MAX, Text, TEXT_PATTERN } from '../bounds.js';

export const PatchOp = Type.Object(
  {
    op: Text(32),
    path: Text(MAX.name),
    value: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);
export const PatchOps = Type.Array(PatchOp, { minItems: 1, maxItems: 16 });
/** Nova's form: `{"<arq uuid>": [ops], ...}`. */
export const PatchMap = Type.Record(Type.String(), PatchOps, {
  minProperties: 1,
  maxProperties: MAX.items,
  propertyNames: { maxLength: MAX.uuid, pattern: TEXT_PATTERN },
});

export type PatchOpsT = Static<typeof PatchOps>;

export type ParsedPatch = { kind: 'bind'; items: { uuid: string; binding: Binding }[] } | { kind: 'unbind'; items: { uuid: string }[] };

const FIELDS = ['hostname', 'device_rp_uuid', 'instance_uuid'] as const;
const PATHS = new Set(['/hostname', '/device_rp_uuid', '/instance_uuid', '/project_id']);

/**
 * Validates a bind/unbind patch with Cyborg's rules: all `add` or all `remove`; known paths
 * only; `/project_id` needs 2.1 (406) and an admin (403); a bind names hostname, RP and
 * instance. Whether it is a bind or an unbind is decided by the first op of the first ARQ.
 */
export function parsePatch(patch: Record<string, PatchOpsT>, version: Microversion, who: Identity): ParsedPatch {
  const entries = Object.entries(patch);
  const kind = entries[0]![1][0]!.op === 'add' ? 'bind' : 'unbind';
  const items = entries.map(([uuid, ops]) => {
    if (!ops.every((o) => o.op === 'add') && !ops.every((o) => o.op === 'remove')) throw patchError('Every op must be add or remove');
    if ((ops[0]!.op === 'add') !== (kind === 'bind')) throw patchError('Every ARQ of one patch must be bound, or every one unbound');
    const values: Record<string, string> = {};
    for (const o of ops) {
      if (!PATHS.has(o.path)) throw patchError(`Invalid path in patch: ${o.path}`);
      if (o.path === '/project_id') {
        if (!atLeast(version, 1)) throw needsVersion('2.1');
        if (!who.isAdmin) throw v2Error('request.forbidden', 'Only an admin may set project_id in a bind');
      }
      if (kind === 'bind') {
        if (typeof o.value !== 'string' || o.value === '' || !isStorable(o.value, MAX.name))
          throw patchError(`Value of ${o.path} must be a non-empty string of at most ${MAX.name} characters, without NUL or unpaired surrogates`);
        values[o.path.slice(1)] = o.value;
      }
    }
    if (kind === 'unbind') return { uuid };
    const absent = FIELDS.filter((f) => values[f] === undefined);
    if (absent.length > 0) throw patchError(`Fields absent in patch ${absent.join(',')}`);
    for (const f of ['device_rp_uuid', 'instance_uuid'] as const) {
      if (!isUuid(values[f]!)) throw patchError(`${f} ${values[f]} is not a uuid`);
    }
    const binding: Binding = {
      hostname: values.hostname!,
      deviceRpUuid: values.device_rp_uuid!,
      instanceUuid: values.instance_uuid!,
      projectId: values.project_id ?? who.projectId,
    };
    return { uuid, binding };
  });
  return kind === 'bind' ? { kind, items: items as { uuid: string; binding: Binding }[] } : { kind, items };
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, openOrm } from '../../db/config.js';
import type { PgJournal } from '../../db/pg-journal.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import { withoutIdentity } from '../../model/index.js';
import { svc } from '../services.js';
import { freshDatabase, openTestJournal, query } from '../support/database.js';
import { recordOf } from '../support/records.js';

const TABLES = [
  'accelerators',
  'attach_handles',
  'attributes',
  'controlpath_ids',
  'deployables',
  'device_profiles',
  'devices',
  'documents',
  'drivers',
  'extended_accelerator_requests',
  'hosts',
  'transition_log',
];

describe.skipIf(!svc.postgres)('persistence: schema and round trips (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let journal: PgJournal;

  beforeAll(async () => {
    db = await freshDatabase('entities', { migrated: false });
  });
  afterAll(async () => {
    await journal?.close();
    await db?.drop();
  });

  it('an operator migrates an empty database: every table appears, and migrating again changes nothing', async () => {
    const orm = await openOrm({ url: db.url, pool: 1 });
    const applied = await migrate(orm);
    expect(applied.length).toBeGreaterThan(0);
    expect(await migrate(orm)).toEqual([]);
    await orm.close();
    const rows = await query<{ table_name: string }>(db.url, `select table_name from information_schema.tables where table_schema = 'public' order by 1`);
    expect(rows.map((r) => r.table_name)).toEqual(expect.arrayContaining([...TABLES, 'cyborg_migrations', 'cyborg_schema_release']));
    journal = await openTestJournal(db.url);
  });

  it('every foreign key has an index on its column, and the entities ask for no schema change the migrations lack', async () => {
    // PostgreSQL indexes the referenced side only: a host's inventory load or a cascading delete
    // would scan whole tables. An index whose first column is the foreign key's serves it.
    const unindexed = await query<{ table_name: string; column_name: string }>(
      db.url,
      `
      select c.conrelid::regclass::text as table_name, a.attname as column_name
        from pg_constraint c join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
       where c.contype = 'f' and c.connamespace = 'public'::regnamespace
         and not exists (select 1 from pg_index i where i.indrelid = c.conrelid and i.indkey[0] = c.conkey[1])
       order by 1, 2`,
    );
    expect(unindexed).toEqual([]);
    const orm = await openOrm({ url: db.url, pool: 1 });
    try {
      expect((await orm.schema.getUpdateSchemaSQL({ wrap: false })).trim()).toBe('');
    } finally {
      await orm.close();
    }
  });

  it('a host, its drivers and its inventory come back as they were reported', async () => {
    // As the conductor commits an inventory: the cards' serials are in the accelerators' records.
    const devices = withoutIdentity(await new FakeDriver({ host: 'compute-1', gpus: 2, nics: 1, vfsPerNic: 2 }).discover());
    await journal.commit([
      {
        type: 'host',
        host: 'compute-1',
        record: { value: 'online', context: { host: 'compute-1', agentId: 'a1', epoch: 1, lastSeq: 0 } },
        drivers: [{ name: 'fake', version: '1.0' }],
      },
      { type: 'inventory', host: 'compute-1', devices },
    ]);
    const back = await journal.load();
    expect(back.hosts).toHaveLength(1);
    expect(back.hosts[0]).toEqual({
      host: 'compute-1',
      record: { value: 'online', context: { host: 'compute-1', agentId: 'a1', epoch: 1, lastSeq: 0 } },
      drivers: [{ name: 'fake', version: '1.0' }],
      devices,
    });
    const [dev] = await query(
      db.url,
      `select d.hostname, c.cpid_info, (select count(*) from deployables where device_id = d.id)::int as deployables
      from devices d join controlpath_ids c on c.device_id = d.id where d.type = 'NIC'`,
    );
    expect(dev).toMatchObject({ hostname: 'compute-1', deployables: 2 });
  });

  it('an agent that registers again with other drivers leaves exactly those driver rows; other hosts keep theirs', async () => {
    const record = (host: string) => ({ value: 'online', context: { host, agentId: 'a2', epoch: 2, lastSeq: 0 } });
    await journal.commit([{ type: 'host', host: 'compute-2', record: record('compute-2'), drivers: [{ name: 'fake', version: '1.0' }] }]);
    await journal.commit([
      {
        type: 'host',
        host: 'compute-1',
        record: record('compute-1'),
        drivers: [
          { name: 'fake', version: '2.0' },
          { name: 'nvidia', version: '550' },
        ],
      },
    ]);
    await journal.commit([{ type: 'host', host: 'compute-1', record: record('compute-1'), drivers: [{ name: 'nvidia', version: '555' }] }]);
    const rows = await query<{ host: string; name: string; version: string }>(db.url, 'select host, name, version from drivers order by host, name');
    expect(rows).toEqual([
      { host: 'compute-1', name: 'nvidia', version: '555' },
      { host: 'compute-2', name: 'fake', version: '1.0' },
    ]);
    const [host] = await query(db.url, `select state, agent_id, context->>'epoch' as epoch from hosts where name = 'compute-1'`);
    expect(host).toEqual({ state: 'online', agent_id: 'a2', epoch: '2' });
    // Put compute-1 back as the next story expects it.
    await journal.commit([
      {
        type: 'host',
        host: 'compute-1',
        record: { value: 'online', context: { host: 'compute-1', agentId: 'a1', epoch: 1, lastSeq: 0 } },
        drivers: [{ name: 'fake', version: '1.0' }],
      },
    ]);
  });

  it("a changed report updates rows in place by Cyborg's identity rules and removes what vanished", async () => {
    const fake = new FakeDriver({ host: 'compute-1', gpus: 2, nics: 1, vfsPerNic: 2 });
    const before = await query<{ id: number; uuid: string }>(db.url, 'select id, uuid from deployables order by id');
    const devices = withoutIdentity(await fake.discover());
    const gone = devices.find((d) => d.type === 'GPU')!;
    const changed = devices
      .filter((d) => d !== gone)
      .map((d) =>
        d.type === 'FPGA'
          ? { ...d, deployables: d.deployables.map((dep) => ({ ...dep, attributes: [...dep.attributes, { key: 'traits2', value: 'CUSTOM_NEW' }] })) }
          : d,
      );
    await journal.commit([{ type: 'inventory', host: 'compute-1', devices: changed }]);
    const after = await query<{ id: number; uuid: string }>(db.url, 'select id, uuid from deployables order by id');
    expect(after).toEqual(before.filter((r) => r.uuid !== gone.deployables[0]!.uuid));
    expect((await journal.load()).hosts[0]!.devices).toEqual(changed);
  });

  it('accelerator and ARQ records, documents, device profiles and the log round-trip', async () => {
    const at = new Date().toISOString();
    const profile = {
      uuid: '8a0e5b7e-3d5e-4b8f-9c1a-1f2e3d4c5b6a',
      name: 'fpga-dp',
      description: 'one FPGA',
      groups: [{ 'resources:FPGA': '1' }],
      createdAt: at,
      updatedAt: null,
    };
    await journal.commit([
      { type: 'accelerator', id: 'acc-1', host: 'compute-1', record: recordOf('ready', { id: 'acc-1', allocations: [] }) },
      {
        type: 'transition',
        record: { kind: 'accelerator', id: 'acc-1', host: 'compute-1', event: 'ENABLE', from: 'inactive', to: 'installing', at, actor: 'op', requestId: 'r1' },
      },
      {
        type: 'transition',
        record: {
          kind: 'accelerator',
          id: 'acc-1',
          host: 'compute-1',
          event: 'xstate.done.actor',
          from: 'installing',
          to: 'ready',
          at,
          actor: 'op',
          requestId: 'r1',
        },
      },
      { type: 'document', collection: 'device_profiles', id: profile.uuid, body: profile },
      { type: 'document', collection: 'settings', id: 'ui', body: { theme: 'dark' } },
      {
        type: 'arq',
        uuid: 'arq-1',
        record: {
          value: 'Initial',
          context: { uuid: 'arq-1', deviceProfileName: 'fpga-dp', deviceProfileGroupId: 0, projectId: 'p1', binding: null, boundTo: null, error: null },
        },
        deleted: false,
      },
    ]);
    const back = await journal.load();
    expect(back.accelerators).toEqual([{ id: 'acc-1', host: 'compute-1', record: { value: 'ready', context: { id: 'acc-1', allocations: [] } } }]);
    expect(back.arqs.map((a) => a.record.value)).toEqual(['Initial']);
    expect(back.documents).toEqual(
      expect.arrayContaining([
        { collection: 'device_profiles', id: profile.uuid, body: profile },
        { collection: 'settings', id: 'ui', body: { theme: 'dark' } },
      ]),
    );
    const [row] = await query(db.url, `select r.state, dp.name from extended_accelerator_requests r join device_profiles dp on dp.id = r.device_profile_id`);
    expect(row).toEqual({ state: 'Initial', name: 'fpga-dp' });
    const [dp] = await query(db.url, 'select profile_json from device_profiles');
    expect(JSON.parse(dp!.profile_json as string)).toEqual({ groups: profile.groups });
    const history = await journal.history('acc-1', 10);
    expect(history.map((h) => `${h.from}->${h.to}`)).toEqual(['inactive->installing', 'installing->ready']);
    expect(history[0]).toMatchObject({ actor: 'op', requestId: 'r1', host: 'compute-1' });
    expect((await journal.history('acc-1', 1)).map((h) => h.to)).toEqual(['ready']);

    await journal.commit([
      { type: 'arq', uuid: 'arq-1', record: recordOf('Deleted'), deleted: true },
      { type: 'document', collection: 'device_profiles', id: profile.uuid, body: null },
    ]);
    const later = await journal.load();
    expect(later.arqs).toEqual([]);
    expect(later.documents.map((d) => d.collection)).toEqual(['settings']);
  });
});

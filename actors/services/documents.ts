import type { Logger } from 'pino';
import { CyborgError } from '../../errors/index.js';
import type { Change, Journal, Recovered } from '../runtime/index.js';
import type { AttributeDoc, DeviceProfileDoc, DeviceStatusDoc, Documents } from '../../model/index.js';

export const Collections = {
  deviceProfiles: 'device_profiles',
  attributes: 'attributes',
  deviceStatus: 'device_status',
} as const;

/**
 * One collection of documents: kept in memory, written through the journal. A write is visible
 * only once its commit has resolved, so reads never see what is not durable.
 */
export class DocumentCollection<T extends { uuid: string }> {
  private readonly items = new Map<string, T>();
  /** Bumped on every committed change: lets readers cache what they derive from the collection. */
  generation = 0;

  constructor(
    readonly name: string,
    private readonly journal: Journal,
    /** Told of each committed write (the conductor's views messages carry it to api processes). */
    private readonly written?: (id: string, body: T | null) => void,
  ) {}

  /** Replaces the collection with what `docs` holds of it. */
  load(docs: Recovered['documents']): void {
    this.items.clear();
    for (const d of docs) if (d.collection === this.name) this.items.set(d.id, d.body as unknown as T);
    this.generation++;
  }

  get(uuid: string): T | undefined {
    return this.items.get(uuid);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  /** Takes a change the database holds (see `DocumentStore.landed`). */
  apply(id: string, body: T | null): void {
    if (body === null) this.items.delete(id);
    else this.items.set(id, body);
    this.generation++;
  }

  async put(doc: T): Promise<T> {
    await this.journal.commit([{ type: 'document', collection: this.name, id: doc.uuid, body: { ...doc } as Record<string, unknown> }]);
    this.items.set(doc.uuid, doc);
    this.generation++;
    this.written?.(doc.uuid, doc);
    return doc;
  }

  async delete(uuid: string): Promise<void> {
    await this.journal.commit([{ type: 'document', collection: this.name, id: uuid, body: null }]);
    this.items.delete(uuid);
    this.generation++;
    this.written?.(uuid, null);
  }
}

/**
 * The conductor's store of Cyborg's plain documents: device profiles, operator-made attributes
 * and device maintenance flags. They have no lifecycle worth a machine, so they are plain rows,
 * rebuilt from `Recovered.documents` at conductor start.
 */
export class DocumentStore implements Documents {
  readonly profiles: DocumentCollection<DeviceProfileDoc>;
  readonly attributes: DocumentCollection<AttributeDoc>;
  readonly statuses: DocumentCollection<DeviceStatusDoc>;
  private readonly byName = new Map<string, string>();
  /** Names of creates not yet committed: a racing create with the same name must lose. */
  private readonly reserved = new Set<string>();
  private readonly writtenListeners = new Set<(collection: string, id: string, body: object | null) => void>();

  constructor(
    journal: Journal,
    private readonly log: Logger,
  ) {
    const tell = (collection: string) => (id: string, body: object | null) => {
      for (const l of this.writtenListeners) l(collection, id, body);
    };
    this.profiles = new DocumentCollection<DeviceProfileDoc>(Collections.deviceProfiles, journal, tell(Collections.deviceProfiles));
    this.attributes = new DocumentCollection<AttributeDoc>(Collections.attributes, journal, tell(Collections.attributes));
    this.statuses = new DocumentCollection<DeviceStatusDoc>(Collections.deviceStatus, journal, tell(Collections.deviceStatus));
  }

  /** Each committed write of a document, as it lands (not those recovered or `landed` after a 503). */
  onWritten(listener: (collection: string, id: string, body: object | null) => void): () => void {
    this.writtenListeners.add(listener);
    return () => this.writtenListeners.delete(listener);
  }

  /** Document changes answered 503 that the database had taken after all (Journal.onLanded). */
  landed(changes: readonly Change[]): void {
    for (const c of changes) {
      if (c.type !== 'document') continue;
      const target = [this.profiles, this.attributes, this.statuses].find((x) => x.name === c.collection) as DocumentCollection<{ uuid: string }> | undefined;
      target?.apply(c.id, c.body as { uuid: string } | null);
    }
    this.byName.clear();
    for (const p of this.profiles.list()) this.byName.set(p.name, p.uuid);
  }

  /** Rebuilds every collection from what the journal recovered. */
  load(docs: Recovered['documents']): void {
    this.profiles.load(docs);
    this.attributes.load(docs);
    this.statuses.load(docs);
    this.byName.clear();
    for (const p of this.profiles.list()) this.byName.set(p.name, p.uuid);
    this.log.info({ deviceProfiles: this.profiles.list().length, attributes: this.attributes.list().length }, 'documents recovered');
  }

  listProfiles(): DeviceProfileDoc[] {
    return this.profiles.list();
  }

  getProfile(uuid: string): DeviceProfileDoc | undefined {
    return this.profiles.get(uuid);
  }

  profileByName(name: string): DeviceProfileDoc | undefined {
    const uuid = this.byName.get(name);
    return uuid === undefined ? undefined : this.profiles.get(uuid);
  }

  /** What an ARQ's device profile group asks to program before binding (Cyborg's `accel:` keys). */
  programOf(arq: { deviceProfileName: string; deviceProfileGroupId: number }): { bitstreamId?: string; functionId?: string } | undefined {
    const group = this.profileByName(arq.deviceProfileName)?.groups[arq.deviceProfileGroupId];
    const bitstreamId = group?.['accel:bitstream_id'];
    const functionId = group?.['accel:function_id'];
    if (!bitstreamId && !functionId) return undefined;
    return { ...(bitstreamId ? { bitstreamId } : {}), ...(functionId ? { functionId } : {}) };
  }

  async createProfile(doc: DeviceProfileDoc): Promise<DeviceProfileDoc> {
    if (this.byName.has(doc.name) || this.reserved.has(doc.name)) {
      throw new CyborgError('device_profile.conflict', `A device_profile with name ${doc.name} already exists.`, { name: doc.name });
    }
    if (this.profiles.get(doc.uuid)) {
      throw new CyborgError('device_profile.conflict', `A device_profile with uuid ${doc.uuid} already exists.`, { uuid: doc.uuid });
    }
    this.reserved.add(doc.name);
    try {
      await this.profiles.put(doc);
      this.byName.set(doc.name, doc.uuid);
      this.log.info({ deviceProfile: doc.uuid, deviceProfileName: doc.name }, 'device profile created');
      return doc;
    } finally {
      this.reserved.delete(doc.name);
    }
  }

  async deleteProfile(uuid: string): Promise<void> {
    const doc = this.profiles.get(uuid);
    if (!doc) return;
    await this.profiles.delete(uuid);
    this.byName.delete(doc.name);
    this.log.info({ deviceProfile: uuid, deviceProfileName: doc.name }, 'device profile deleted');
  }

  listAttributes(): AttributeDoc[] {
    return this.attributes.list();
  }

  getAttribute(uuid: string): AttributeDoc | undefined {
    return this.attributes.get(uuid);
  }

  async createAttribute(doc: AttributeDoc): Promise<AttributeDoc> {
    await this.attributes.put(doc);
    this.log.info({ attribute: doc.uuid, deployableUuid: doc.deployableUuid, key: doc.key }, 'attribute created');
    return doc;
  }

  async deleteAttribute(uuid: string): Promise<void> {
    await this.attributes.delete(uuid);
    this.log.info({ attribute: uuid }, 'attribute deleted');
  }

  deviceStatus(uuid: string): DeviceStatusDoc['status'] {
    return this.statuses.get(uuid)?.status ?? 'enabled';
  }

  async setDeviceStatus(uuid: string, status: DeviceStatusDoc['status']): Promise<void> {
    await this.statuses.put({ uuid, status, updatedAt: new Date().toISOString() });
    this.log.info({ deviceUuid: uuid, status }, 'device status set');
  }

  get statusGeneration(): number {
    return this.statuses.generation;
  }
}

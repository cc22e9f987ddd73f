import type { Logger } from 'pino';
import { stableId } from '../../ids/index.js';
import type { PlacementClient, Provider } from './client.js';
import { isPlacementError } from './errors.js';

/** The compute node's provider is not in Placement (yet): nova-compute has not created it. */
export class RootProviderMissingError extends Error {
  constructor(
    readonly host: string,
    readonly rpName: string,
  ) {
    super(
      `no resource provider named "${rpName}" in Placement for host ${host}: nova-compute creates it; ` +
        'retrying (set PLACEMENT_CREATE_ROOT_PROVIDERS=true for a setup without Nova)',
    );
    this.name = 'RootProviderMissingError';
  }
}

export interface RootProvidersOptions {
  client: PlacementClient;
  log: Logger;
  /** `resource_provider_name` template; `{host}` is the agent's host name. */
  nameTemplate: string;
  /** Nova-less: create a root provider per host when none exists. */
  createRoots: boolean;
}

/**
 * Finds (and caches) the compute node's resource provider that a host's deployable providers
 * hang under, as Cyborg does: the first provider named after the host. Without Nova it can
 * create one, with a uuid derived from the name so a restart finds the same one.
 */
export class RootProviders {
  private cache = new Map<string, string>();
  /** Roots this process has just created, until the first sync of their host takes them: their tree is known (the root alone). */
  private created = new Map<string, Provider>();

  constructor(private readonly opts: RootProvidersOptions) {}

  nameOf(host: string): string {
    return this.opts.nameTemplate.replaceAll('{host}', host);
  }

  /** The root provider's uuid; throws RootProviderMissingError when there is none. */
  async resolve(host: string): Promise<string> {
    const cached = this.cache.get(host);
    if (cached) return cached;
    const name = this.nameOf(host);
    let found = (await this.opts.client.providersByName(name))[0];
    if (!found && this.opts.createRoots) {
      try {
        found = await this.opts.client.createProvider({ uuid: stableId('placement-root', name), name });
        this.created.set(host, found);
        this.opts.log.info({ host, rpName: name, rpUuid: found.uuid }, 'created a root resource provider for the host (no Nova)');
      } catch (err) {
        // Someone (nova-compute, another conductor) created it meanwhile: use theirs.
        if (!isPlacementError(err) || err.httpStatus !== 409) throw err;
        found = (await this.opts.client.providersByName(name))[0];
      }
    }
    if (!found) throw new RootProviderMissingError(host, name);
    this.cache.set(host, found.uuid);
    return found.uuid;
  }

  /**
   * Deletes the root provider this conductor created for `host` (Nova-less: `createRoots`, its
   * uuid derived from the name), once nothing hangs under it; one nova-compute made (another
   * uuid), one with providers of others under it, or one with allocations (409) is left. True
   * when it was deleted. A host deleted from Cyborg leaves no provider of Cyborg's own behind.
   */
  async deleteCreated(host: string): Promise<boolean> {
    this.forget(host);
    if (!this.opts.createRoots) return false;
    const name = this.nameOf(host);
    const uuid = stableId('placement-root', name);
    if (!(await this.opts.client.providersByName(name)).some((p) => p.uuid === uuid)) return false;
    if ((await this.opts.client.providersInTree(uuid)).some((p) => p.uuid !== uuid)) return false;
    try {
      const deleted = await this.opts.client.deleteProvider(uuid);
      if (deleted) this.opts.log.info({ host, rpName: name, rpUuid: uuid }, 'deleted the root resource provider created for the host (no Nova)');
      return deleted;
    } catch (err) {
      if (isPlacementError(err) && err.httpStatus === 409) return false;
      throw err;
    }
  }

  /** Forgets a host's root, e.g. after Placement says it is gone. */
  forget(host: string): void {
    this.cache.delete(host);
    this.created.delete(host);
  }

  /**
   * The root provider this process created for `host` since the last call, once: nothing can hang
   * under a provider Placement made for us a moment ago, so its tree need not be listed (a cold
   * start saves one request per host).
   */
  takeCreated(host: string): Provider | undefined {
    const p = this.created.get(host);
    this.created.delete(host);
    return p;
  }
}

import type { Logger } from 'pino';
import { canHoldImages, type Progress, type Driver, type OpRequest } from '../../drivers/index.js';
import { DriverError } from '../../errors/index.js';
import type { BitstreamSource } from '../../openstack/glance/index.js';

export interface ProgrammingDeps {
  /** `[glance]`: absent when the agent has no Glance configured. */
  images?: BitstreamSource;
  /** Every driver of the agent: the images their cards run are kept when the download dir is pruned. */
  drivers: () => readonly Driver[];
  /** Each step, as it happens (sent to the conductor). */
  onProgress: (p: Progress) => void;
  log: Logger;
}

/** A programming of a driver, with what it reports as it goes. */
type Program = (req: OpRequest, onProgress: (p: Progress) => void) => Promise<Record<string, unknown>>;

/** Thrown before the card was touched: the agent's reply says the card is `unchanged`. */
export class BeforeTheCard extends Error {
  constructor(readonly original: unknown) {
    super(original instanceof Error ? original.message : String(original), { cause: original });
  }
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * A programming whose image is named by Glance id (`bitstreamId`) or by function (`functionId`)
 * — a device profile's `accel:bitstream_id` / `accel:function_id` at bind, or the operator's
 * PROGRAM — as Cyborg's agent runs it: the image is found and downloaded from Glance here, on
 * the host that programs it, and the driver gets the file with Glance's checksums, verifies them
 * and programs (rolling back itself on failure). The result names the image and its function,
 * which the conductor records (and Placement's function trait follows). A parameter set that
 * already names a file (`imagePath`) or names no image goes to the driver as it is.
 */
export async function programWithImage(driver: Driver, req: OpRequest, program: Program, deps: ProgrammingDeps): Promise<Record<string, unknown>> {
  const bitstreamId = text(req.params.bitstreamId);
  const functionId = text(req.params.functionId);
  const byGlance = (bitstreamId || functionId) && !text(req.params.imagePath);
  // The fake driver "programs" ids without files; a driver that writes files needs Glance.
  if (!byGlance || (!deps.images && !canHoldImages(driver))) return program(req, deps.onProgress);
  const images = deps.images;
  if (!images) {
    throw new BeforeTheCard(
      new DriverError(
        'driver.failed',
        `programming ${bitstreamId ? `bitstream ${bitstreamId}` : `function ${functionId}`} needs Glance, and this agent has none ([glance] endpoint_override or auth_url)`,
        { reason: 'glance_not_configured' },
      ),
    );
  }
  let fetched: Awaited<ReturnType<BitstreamSource['fetch']>>;
  try {
    deps.onProgress({
      phase: 'fetch',
      message: bitstreamId ? `looking up image ${bitstreamId} in Glance` : `looking up the image of function ${functionId} in Glance`,
    });
    const image = await images.resolve({ ...(bitstreamId ? { bitstreamId } : {}), ...(functionId ? { functionId } : {}) });
    fetched = await images.fetch(image, (message) => deps.onProgress({ phase: 'fetch', message }));
  } catch (err) {
    throw new BeforeTheCard(err);
  }
  const fn = functionId ?? fetched.functionId;
  const params: Record<string, unknown> = {
    ...req.params,
    imagePath: fetched.path,
    bitstreamId: fetched.imageId,
    ...(fn ? { functionId: fn } : {}),
    ...(fetched.hashAlgorithm ? { hashAlgorithm: fetched.hashAlgorithm, hash: fetched.hash } : {}),
    ...(fetched.md5 ? { md5: fetched.md5 } : {}),
  };
  try {
    const result = await program({ ...req, params }, deps.onProgress);
    return { ...result, bitstreamId: fetched.imageId, functionId: fn ?? null };
  } finally {
    fetched.release();
    await prune(images, deps);
  }
}

/** Keeps the download dir to the images the cards run (rollback targets) and those in use now. */
async function prune(images: BitstreamSource, deps: ProgrammingDeps): Promise<void> {
  try {
    const keep: string[] = [];
    for (const d of deps.drivers()) if (canHoldImages(d)) keep.push(...(await d.imagesInUse()));
    const removed = await images.prune(keep);
    if (removed.length > 0) deps.log.debug({ removed }, 'images no card runs removed from the download dir');
  } catch (err) {
    deps.log.warn({ err }, 'could not prune the image download dir; it is tried again after the next programming');
  }
}

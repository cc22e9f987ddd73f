import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { GlanceClient, GlanceImage } from './client.js';
import { glanceError } from './client.js';

/** A bitstream on local disk, with the checksums Glance vouches for (the driver verifies them). */
export interface FetchedImage {
  imageId: string;
  path: string;
  /** The image's `accel:function_id` property, when it has one. */
  functionId?: string;
  /** Glance's `os_hash_algo` / `os_hash_value`. */
  hashAlgorithm?: string;
  hash?: string;
  /** Glance's legacy md5 `checksum`. */
  md5?: string;
}

export interface ImageStoreOptions {
  client: Pick<GlanceClient, 'image' | 'byFunctionId' | 'data'>;
  /** `[glance] download_dir`. */
  dir: string;
  /** `[glance] max_image_bytes`: a bigger image is refused, by its record or while it streams. */
  maxImageBytes: number;
  /** `[glance] timeout`: the deadline of one download, from the first byte asked to the last written. */
  timeoutMs: number;
}

/** What the agent needs of Glance to program an FPGA (tests hand it a store on a Glance test double). */
export type BitstreamSource = Pick<ImageStore, 'resolve' | 'fetch' | 'prune'>;

/**
 * The agent's bitstreams from Glance, on disk in `[glance] download_dir` as `<image id>.bit`.
 * A download goes to a file of its own (`.part`) and is renamed into place only whole and within
 * `max_image_bytes`, so concurrent binds never read a half-written file. The directory holds
 * what the cards run (a failed programming rolls back to it) and the downloads under way: the
 * agent prunes the rest after every programming, so it stays within one image per card.
 */
export class ImageStore {
  /** Files being written or about to be programmed: never pruned. */
  private readonly busy = new Map<string, number>();

  constructor(private readonly o: ImageStoreOptions) {}

  get dir(): string {
    return this.o.dir;
  }

  /** The image a device profile names: by id (`accel:bitstream_id`) or by function (`accel:function_id`), never both. */
  resolve(ref: { bitstreamId?: string; functionId?: string }): Promise<GlanceImage> {
    if (ref.bitstreamId && ref.functionId) {
      return Promise.reject(glanceError('only one of accel:bitstream_id and accel:function_id may be set, both are', 'program_ambiguous'));
    }
    if (ref.bitstreamId) return this.o.client.image(ref.bitstreamId);
    if (ref.functionId) return this.o.client.byFunctionId(ref.functionId);
    return Promise.reject(glanceError('nothing names the image to program (bitstream id or function id)', 'image_missing'));
  }

  /**
   * Downloads `image` (active, within the size bound, its length as its record says) and hands
   * back its path with Glance's checksums. The file is held (`release`) until the programming
   * that asked for it ends, so that a prune meanwhile leaves it.
   */
  async fetch(image: GlanceImage, onProgress: (message: string) => void = () => undefined): Promise<FetchedImage & { release: () => void }> {
    const id = image.id;
    if (image.status !== 'active') throw glanceError(`image ${id} is ${image.status} in Glance, not active`, 'image_not_active', { imageId: id });
    const max = this.o.maxImageBytes;
    if (typeof image.size === 'number' && image.size > max) {
      throw glanceError(`image ${id} is ${image.size} bytes, above [glance] max_image_bytes ${max}`, 'image_too_large', { imageId: id, size: image.size });
    }
    await mkdir(this.o.dir, { recursive: true });
    const path = join(this.o.dir, `${id.replace(/[^A-Za-z0-9_.-]/g, '_')}.bit`);
    const partial = `${path}.${randomUUID()}.part`;
    const release = this.hold(path);
    let bytes = 0;
    try {
      onProgress(`downloading image ${id}${typeof image.size === 'number' ? ` (${image.size} bytes)` : ''}`);
      const res = await this.o.client.data(id, AbortSignal.timeout(this.o.timeoutMs));
      const bound = new Transform({
        transform(chunk: Buffer, _enc, done) {
          bytes += chunk.length;
          if (bytes > max) done(glanceError(`image ${id} is larger than [glance] max_image_bytes ${max}`, 'image_too_large', { imageId: id }));
          else done(null, chunk);
        },
      });
      await pipeline(res.body, bound, createWriteStream(partial));
      if (typeof image.size === 'number' && bytes !== image.size) {
        throw glanceError(`image ${id}: Glance sent ${bytes} bytes, its record says ${image.size}`, 'image_download_failed', { imageId: id });
      }
      await rename(partial, path);
      onProgress(`downloaded image ${id} (${bytes} bytes)`);
    } catch (err) {
      release();
      await rm(partial, { force: true });
      const e = err as { name?: string; code?: string; message?: string; details?: unknown };
      if (e.details !== undefined) throw err;
      const why = e.name === 'TimeoutError' || e.name === 'AbortError' ? `not done within [glance] timeout ${this.o.timeoutMs} ms` : (e.message ?? String(err));
      throw glanceError(`downloading image ${id} failed: ${why}`, 'image_download_failed', { imageId: id }, err);
    }
    const fn = image['accel:function_id'];
    return {
      imageId: id,
      path,
      release,
      ...(typeof fn === 'string' && fn ? { functionId: fn } : {}),
      ...(image.os_hash_algo && image.os_hash_value ? { hashAlgorithm: image.os_hash_algo, hash: image.os_hash_value } : {}),
      ...(image.checksum ? { md5: image.checksum } : {}),
    };
  }

  /**
   * Deletes the downloads that are neither in `keep` (the images the cards run: the rollback
   * targets) nor held by a programming under way; answers the files removed.
   */
  async prune(keep: Iterable<string>): Promise<string[]> {
    const kept = new Set([...keep].map((p) => resolve(p)));
    const names = await readdir(this.o.dir).catch(() => [] as string[]);
    const removed: string[] = [];
    for (const name of names) {
      const path = resolve(this.o.dir, name);
      if (!/\.(bit|part)$/.test(name) || kept.has(path) || this.busy.has(path) || [...this.busy.keys()].some((b) => path.startsWith(`${b}.`))) continue;
      await rm(path, { force: true });
      removed.push(path);
    }
    return removed;
  }

  private hold(path: string): () => void {
    const key = resolve(path);
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.busy.get(key) ?? 1) - 1;
      if (n > 0) this.busy.set(key, n);
      else this.busy.delete(key);
    };
  }
}

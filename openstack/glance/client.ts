import type { Dispatcher } from 'undici';
import { DriverError } from '../../errors/index.js';
import { openstackDispatcher, undici, type LazyDispatcher } from '../keystone/http.js';
import { globalRequestIdHeader } from '../request-id.js';

/** What an image's record in Glance says of it (the fields a programming needs). */
export interface GlanceImage {
  id: string;
  name?: string | null;
  status: string;
  size?: number | null;
  /** md5 of the data, Glance's legacy checksum. */
  checksum?: string | null;
  /** Glance's multihash (`[DEFAULT] hashing_algorithm`, sha512 unless its operator chose another). */
  os_hash_algo?: string | null;
  os_hash_value?: string | null;
  [property: string]: unknown;
}

export interface GlanceClientOptions {
  /** Glance's endpoint (the catalog's `image` entry, or the override). */
  endpoint: () => Promise<string>;
  /** The token to send; none without Keystone (a private Glance behind an endpoint override). */
  token?: () => Promise<string>;
  /** Forgets a token Glance answered 401 to, so that the next `token()` authenticates again. */
  invalidate?: (token: string) => void;
  /** Deadline of one metadata request, and of the whole of one download. */
  timeoutMs: number;
  /** Retries of a request that got no answer or a 502/503/504 (Cyborg's `[glance] num_retries`). */
  retries: number;
  dispatcher?: LazyDispatcher;
}

/** Glance's image ids are UUIDs (Cyborg's agent refuses anything else before it asks). */
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * The slice of Glance's image API v2 that programming an FPGA on bind needs, as Cyborg uses it:
 * an image's record (`GET /v2/images/{id}`), the one image carrying a function id
 * (`GET /v2/images?accel:function_id=…`), and its data (`GET /v2/images/{id}/file`), streamed.
 * Requests that get no answer or a 502/503/504 are retried (undici's RetryAgent, as every
 * OpenStack client here); a 401 makes the session authenticate again, once.
 */
export class GlanceClient {
  private readonly dispatcher: LazyDispatcher;

  constructor(private readonly o: GlanceClientOptions) {
    this.dispatcher = o.dispatcher ?? openstackDispatcher({ retries: o.retries });
  }

  /** The record of image `id` (`accel:bitstream_id`). */
  async image(id: string): Promise<GlanceImage> {
    if (!UUID.test(id))
      throw glanceError(`bitstream id ${JSON.stringify(id.slice(0, 80))} is not a Glance image id (a UUID)`, 'image_id_invalid', { imageId: id.slice(0, 80) });
    return this.json<GlanceImage>(`/v2/images/${encodeURIComponent(id)}`, `image ${id}`, id);
  }

  /**
   * The image whose `accel:function_id` property is `functionId`, found as Cyborg finds it: the
   * images listed with that property as the only filter, of which there must be exactly one.
   */
  async byFunctionId(functionId: string): Promise<GlanceImage> {
    const q = new URLSearchParams({ 'accel:function_id': functionId });
    const body = await this.json<{ images?: GlanceImage[] }>(`/v2/images?${q}`, `the images of function ${functionId}`);
    const images = Array.isArray(body.images) ? body.images : [];
    if (images.length !== 1) {
      throw glanceError(
        images.length === 0
          ? `Glance has no image with accel:function_id ${functionId}`
          : `Glance has ${images.length} images with accel:function_id ${functionId} (${images
              .slice(0, 5)
              .map((i) => i.id)
              .join(', ')}); exactly one must provide a function`,
        images.length === 0 ? 'image_not_found' : 'image_ambiguous',
        { functionId, count: images.length },
      );
    }
    return images[0]!;
  }

  /** The data of `imageId`, as a stream; the caller consumes or dumps the body. */
  async data(imageId: string, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    const res = await this.send(`/v2/images/${encodeURIComponent(imageId)}/file`, signal, `the data of image ${imageId}`);
    if (res.statusCode === 200) return res;
    await res.body.dump();
    if (res.statusCode === 204) throw glanceError(`image ${imageId} has no data in Glance`, 'image_no_data', { imageId });
    throw this.failed(res.statusCode, `the data of image ${imageId}`, imageId);
  }

  private async json<T>(path: string, what: string, imageId?: string): Promise<T> {
    const res = await this.send(path, AbortSignal.timeout(this.o.timeoutMs), what);
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw this.failed(res.statusCode, what, imageId);
    }
    try {
      return (await res.body.json()) as T;
    } catch (err) {
      throw glanceError(`Glance's answer for ${what} is not JSON: ${(err as Error).message}`, 'glance_failed', {}, err);
    }
  }

  private failed(status: number, what: string, imageId?: string): DriverError {
    const id = imageId ? { imageId } : {};
    if (status === 404) return glanceError(`Glance has no ${what} (404)`, 'image_not_found', id);
    if (status === 401 || status === 403)
      return glanceError(`Glance refused ${what} to this agent's user (${status}): see [glance] auth_url and its user`, 'glance_forbidden', id);
    return glanceError(`Glance answered ${status} for ${what}`, 'glance_failed', { ...id, status });
  }

  private async send(path: string, signal: AbortSignal, what: string): Promise<Dispatcher.ResponseData> {
    let base: string;
    try {
      base = (await this.o.endpoint()).replace(/\/+$/, '').replace(/\/v2$/, '');
    } catch (err) {
      throw glanceError(`Glance's endpoint is unknown: ${(err as Error).message}`, 'glance_unreachable', {}, err);
    }
    const [{ request }, dispatcher] = await Promise.all([undici(), this.dispatcher()]);
    for (let attempt = 0; ; attempt++) {
      const token = this.o.token ? await this.o.token() : undefined;
      let res: Dispatcher.ResponseData;
      try {
        res = await request(`${base}${path}`, {
          dispatcher,
          headers: { accept: '*/*', ...(token ? { 'x-auth-token': token } : {}), ...globalRequestIdHeader() },
          signal,
          headersTimeout: this.o.timeoutMs,
          bodyTimeout: this.o.timeoutMs,
        });
      } catch (err) {
        // undici's RetryAgent gave up on a 502/503/504: Glance answered, just not usefully.
        const status = (err as { statusCode?: unknown }).statusCode;
        if (typeof status === 'number')
          throw glanceError(`Glance answered ${status} for ${what} (${this.o.retries} retries)`, 'glance_failed', { status }, err);
        const why =
          (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError' ? `no answer within ${this.o.timeoutMs} ms` : (err as Error).message;
        throw glanceError(`Glance did not answer for ${what}: ${why}`, 'glance_unreachable', {}, err);
      }
      if (res.statusCode !== 401 || !token || !this.o.invalidate || attempt > 0) return res;
      await res.body.dump();
      this.o.invalidate(token);
    }
  }
}

/** A failure before the card was touched: the agent says so (`unchanged`), the card stays in service. */
export function glanceError(message: string, reason: string, details: Record<string, unknown> = {}, cause?: unknown): DriverError {
  return new DriverError('driver.failed', message, { reason, ...details }, cause === undefined ? undefined : { cause });
}

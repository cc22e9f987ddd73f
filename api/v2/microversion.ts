import type { FastifyReply, FastifyRequest } from 'fastify';
import { v2Error } from './errors.js';

export const MIN_VERSION = { major: 2, minor: 0 } as const;
export const MAX_VERSION = { major: 2, minor: 3 } as const;
export const MIN_TEXT = '2.0';
export const MAX_TEXT = '2.3';

export interface Microversion {
  major: number;
  minor: number;
}

/** `a >= b` for microversions. */
export function atLeast(v: Microversion, minor: number): boolean {
  return v.major > 2 || (v.major === 2 && v.minor >= minor);
}

/**
 * Reads `OpenStack-API-Version` the way Cyborg does: `accelerator 2.N` (or a bare `2.N`, or
 * `latest`) among comma-separated entries; no entry for `accelerator` means 2.0. An unparsable
 * value or one outside [2.0, 2.3] is a 406.
 */
export function parseMicroversion(header: string | string[] | undefined): Microversion {
  if (header === undefined) return { ...MIN_VERSION };
  const raw = (Array.isArray(header) ? header.join(',') : header).trim();
  if (raw === '') return { ...MIN_VERSION };
  let value: string | undefined;
  for (const entry of raw.split(',')) {
    const parts = entry.trim().split(/\s+/);
    if (parts.length === 1 && /^\d/.test(parts[0]!))
      value = parts[0]; // bare "2.N" (deprecated form)
    else if (parts.length === 2 && parts[0]!.toLowerCase() === 'accelerator') value = parts[1];
  }
  if (value === undefined) return { ...MIN_VERSION };
  if (value.toLowerCase() === 'latest') return { ...MAX_VERSION };
  const m = /^(\d+)\.(\d+)$/.exec(value);
  if (!m) throw v2Error('request.not_acceptable', 'Invalid value for OpenStack-API-Version header', { value });
  const v = { major: Number(m[1]), minor: Number(m[2]) };
  if (v.major !== MAX_VERSION.major || v.minor < MIN_VERSION.minor || v.minor > MAX_VERSION.minor) {
    throw v2Error(
      'request.not_acceptable',
      `Version ${value} was requested but the minor version is not supported by this service. The supported version range is: [${MIN_TEXT}, ${MAX_TEXT}].`,
      { value },
    );
  }
  return v;
}

/**
 * onRequest hook of every v2 route: sets Cyborg's microversion headers (the min/max ones also on
 * a 406) and records the version on the request.
 */
export async function microversionHook(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header('OpenStack-API-Minimum-Version', MIN_TEXT);
  reply.header('OpenStack-API-Maximum-Version', MAX_TEXT);
  reply.header('Vary', 'OpenStack-API-Version');
  const v = parseMicroversion(req.headers['openstack-api-version']);
  reply.header('OpenStack-API-Version', `accelerator ${v.major}.${v.minor}`);
  req.microversion = v;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The Cyborg microversion this v2 request runs at. */
    microversion: Microversion;
  }
}

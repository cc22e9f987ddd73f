import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

/**
 * The Fastify instance a route plugin registers on, typed by TypeBox: what each route's own
 * function takes, so that a plugin is a list of routes rather than one function declaring them all.
 */
export type RouteScope = Parameters<FastifyPluginAsyncTypebox>[0];

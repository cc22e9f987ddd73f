export { authMethod, type KeystoneAuthOptions } from './auth-method.js';
export { findEndpoint, type EndpointFilter } from './catalog.js';
export { openstackDispatcher, undici, type HttpAnswer, type LazyDispatcher } from './http.js';
export { KeystoneSession, v3Url, type KeystoneSessionOptions } from './session.js';
export { TokenCache, type TokenCacheOptions } from './token-cache.js';
export { authBody, KeystoneUnavailableError, readToken, ServiceAuthError, type AuthMethod, type CatalogEntry, type KeystoneToken } from './types.js';
export { TokenValidator, type TokenValidatorOptions } from './validator.js';
export { KeystoneDirectory, type KeystoneDirectoryOptions } from './directory.js';

export { defaultSearchContext, findCloud, loadClouds, searchPath, type CloudEntry, type SearchContext } from './clouds.js';
export { apiRoot, connect, SERVICE_TYPE, type Connection, type UrlChoice } from './connect.js';
export { ClientConfigError, CredentialsRefusedError, KeystoneUnreachableError, SignInError } from './errors.js';
export { authFailure, deploymentOf } from './report.js';
export { addOpenStackOptions, openStackValues, planAuth, type AuthPlan } from './options.js';
export { CliTokenCache, forgetTokens, identityOf, tokenCacheDir } from './token-cache.js';

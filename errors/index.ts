/** The door of errors/, the ground floor: the catalogue of stable codes and its error classes, and what of a failure may leave the process. */
export { BusError, CyborgError, DriverError, ErrorCodes, isCyborgError, NotFoundError, TransitionInvalidError, type ErrorCode } from './catalogue.js';
export { DATABASE_FAILED, publicMessage, refusalText } from './public-message.js';

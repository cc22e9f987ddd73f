import { describe, expect, it } from 'vitest';
import { classifyFailure } from './retry.js';

/** An error shaped as `pg` reports a server's answer. */
const server = (code: string, message = 'from the server'): Error => Object.assign(new Error(message), { code });

describe('what a failed flush means for its batch', () => {
  it('an unreachable or restarting database is an outage: the batch is kept and retried', () => {
    expect(classifyFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe('outage');
    expect(classifyFailure(new Error('Connection terminated unexpectedly'))).toBe('outage');
    expect(classifyFailure(new Error('timeout exceeded when trying to connect'))).toBe('outage');
    expect(classifyFailure(server('57P01', 'terminating connection due to administrator command'))).toBe('outage');
    expect(classifyFailure(server('08006'))).toBe('outage');
    expect(classifyFailure(server('53100', 'could not extend file: No space left on device'))).toBe('outage');
    expect(classifyFailure(server('40P01', 'deadlock detected'))).toBe('outage');
  });

  it('a value or row the database refuses is data: the batch is split until the bad commit is alone', () => {
    expect(classifyFailure(server('22021', 'invalid byte sequence for encoding "UTF8": 0x00'))).toBe('data');
    expect(classifyFailure(server('22P05', 'unsupported Unicode escape sequence'))).toBe('data');
    expect(classifyFailure(server('23505', 'duplicate key value violates unique constraint'))).toBe('data');
    expect(classifyFailure(server('54000', 'index row size exceeds maximum'))).toBe('data');
    // MikroORM wraps the driver's error and keeps its SQLSTATE.
    expect(classifyFailure(Object.assign(new Error('wrapped'), { name: 'DriverException', sqlState: '22001', cause: server('22001') }))).toBe('data');
  });

  it('a protocol violation is not an outage: what we sent cannot be parsed, and sending it again fails again', () => {
    // A NUL inside a query's text truncates the message: the server answers 08P01.
    expect(classifyFailure(server('08P01', 'invalid message format'))).toBe('other');
  });

  it('anything else is split too, so one bad commit cannot hold up the others', () => {
    expect(classifyFailure(server('42P01', 'relation "nope" does not exist'))).toBe('other');
    expect(classifyFailure(new TypeError('Converting circular structure to JSON'))).toBe('other');
  });
});

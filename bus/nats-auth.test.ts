import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/errors.js';
import { natsConnectSettings } from './nats-auth.js';

describe('NATS credentials from the configuration', () => {
  it('takes user and password from the URL, and keeps them out of the server list', () => {
    const s = natsConnectSettings('nats://conductor:s%40cret@nats-1:4222,nats://conductor:s%40cret@nats-2');
    expect(s.servers).toEqual(['nats-1:4222', 'nats-2:4222']);
    expect(s.options).toMatchObject({ user: 'conductor', pass: 's@cret' });
    expect(s.identity).toBe('user conductor');
  });

  it('reads a lone user name in the URL as a token; [nats] options win over the URL', () => {
    expect(natsConnectSettings('nats://t0ken@nats-1:4222').options).toEqual({ token: 't0ken' });
    expect(natsConnectSettings('nats://a:b@nats-1', { user: 'api', password: 'p' }).options).toEqual({ user: 'api', pass: 'p' });
  });

  it('turns TLS on with a tls:// URL', () => {
    expect(natsConnectSettings('tls://nats-1:4222').options.tls).toEqual({});
  });

  it('refuses two methods at once, a password without a user, and an unreadable file, naming the option', () => {
    expect(() => natsConnectSettings('nats://h', { user: 'a', password: 'b', token: 't' })).toThrow(ConfigError);
    expect(() => natsConnectSettings('nats://h', { password: 'b' })).toThrow(/needs \[nats\] user/);
    expect(() => natsConnectSettings('nats://h', { credsFile: '/nonexistent/x.creds' })).toThrow(/creds_file \(NATS_CREDS_FILE\): cannot read/);
    expect(() => natsConnectSettings('amqp://h')).toThrow(/not NATS/);
  });
});

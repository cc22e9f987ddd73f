import { optionSource, StartupError, StartupExit, type Config } from '../config/index.js';

/** The options that set a listener's port, by the port they set, and where it binds. */
export interface Listeners {
  /** `[api] port` and the like: the option as the operator gave it. */
  ports: { option: string; port: number }[];
  /** `[api] host_ip`, `environment variable CYBORG_LISTEN_ADDRESS`, `--listen`. */
  address: { option: string; value: string };
}

/**
 * The listeners a role opens from `config`: the API's (api, all-in-one), the visualizer's, health
 * and metrics; each named as the operator set it (a variable, a file's option, a flag) or, left at
 * its default, by its option in the file.
 */
export function listenersOf(config: Config): Listeners {
  return {
    ports: [
      { option: optionSource(config, 'listen.port'), port: config.listen.port },
      { option: optionSource(config, 'listen.uiPort'), port: config.listen.uiPort },
      { option: optionSource(config, 'distributed.metricsPort'), port: config.distributed.metricsPort },
    ],
    address: { option: optionSource(config, 'listen.address'), value: config.listen.address },
  };
}

/**
 * A listener that could not bind, as one line naming the option that set its port or address:
 * a port in use (another cyborg, another service), an address not this machine's, a port below
 * 1024 without the right to it, a host name the resolver does not know. Anything else is
 * returned as it came.
 */
export function explainStartupError(err: unknown, listeners: Listeners): unknown {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string };
  if (!e || typeof e !== 'object') return err;
  // The listener resolves a host name before it binds: a name that does not resolve fails there,
  // in getaddrinfo, before any listen().
  if (e.syscall === 'getaddrinfo' && e.hostname === listeners.address.value)
    return new StartupError(
      `${listeners.address.option} = ${listeners.address.value}: the name does not resolve (${e.code ?? e.message}); set one of this machine's addresses or host names, or 0.0.0.0 for all`,
      StartupExit.listen,
    );
  if (e.syscall !== 'listen' && e.code !== 'EADDRINUSE' && e.code !== 'EADDRNOTAVAIL') return err;
  const where = `${e.address ?? listeners.address.value}:${e.port ?? '?'}`;
  const port = listeners.ports.find((p) => p.port === e.port);
  const portOption = port ? `${port.option} = ${port.port}` : `the port ${e.port ?? '?'}`;
  if (e.code === 'EADDRINUSE') return new StartupError(`${portOption}: ${where} is in use by another process; stop it or set another port`, StartupExit.listen);
  if (e.code === 'EADDRNOTAVAIL')
    return new StartupError(
      `${listeners.address.option} = ${listeners.address.value}: not an address of this machine; set one of its addresses, or 0.0.0.0 for all`,
      StartupExit.listen,
    );
  if (e.code === 'EACCES')
    return new StartupError(`${portOption}: no permission to listen on ${where} (ports below 1024 need CAP_NET_BIND_SERVICE)`, StartupExit.listen);
  return new StartupError(`${portOption}: cannot listen on ${where} (${e.code ?? e.message})`, StartupExit.listen);
}

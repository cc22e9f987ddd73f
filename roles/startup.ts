import { StartupError, StartupExit, type Config } from '../config/index.js';

/** The options that set a listener's port, by the port they set, and where it binds. */
export interface Listeners {
  /** `[api] port` and the like: the option as the operator writes it, with its variable. */
  ports: { option: string; port: number }[];
  /** `[api] host_ip (CYBORG_LISTEN_ADDRESS)`. */
  address: { option: string; value: string };
}

/** The listeners a role opens from `config`: the API's (api, all-in-one), the visualizer's, health and metrics. */
export function listenersOf(config: Config): Listeners {
  return {
    ports: [
      { option: '[api] port (CYBORG_PORT, --port)', port: config.listen.port },
      { option: '[api] ui_port (CYBORG_UI_PORT)', port: config.listen.uiPort },
      { option: 'metrics_port (CYBORG_METRICS_PORT, --metrics-port)', port: config.distributed.metricsPort },
    ],
    address: { option: '[api] host_ip (CYBORG_LISTEN_ADDRESS, --listen)', value: config.listen.address },
  };
}

/**
 * A listener that could not bind, as one line naming the option that set its port or address:
 * a port in use (another cyborg, another service), an address not this machine's, a port below
 * 1024 without the right to it. Anything else is returned as it came.
 */
export function explainStartupError(err: unknown, listeners: Listeners): unknown {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (!e || typeof e !== 'object' || (e.syscall !== 'listen' && e.code !== 'EADDRINUSE' && e.code !== 'EADDRNOTAVAIL')) return err;
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

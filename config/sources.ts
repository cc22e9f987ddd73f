import { OPTIONS } from './options.js';

/** Where each loaded configuration's settings came from, kept beside it: the frozen config stays the schema's plain data. */
const SOURCES = new WeakMap<object, ReadonlyMap<string, string>>();

/**
 * The option behind a setting as the operator gave it — `environment variable CYBORG_PORT`, `<file>
 * [api] port`, `--port` — or, for a default, its `[section] option` in the file: the name a
 * start-up error puts first, so the operator is sent to what they wrote, never to a flag they did
 * not pass.
 */
export function optionSource(config: object, path: string): string {
  const given = SOURCES.get(config)?.get(path);
  if (given) return given;
  const spec = OPTIONS.find((o) => o.path === path);
  return spec ? `[${spec.section}] ${spec.name}` : path;
}

/** The longest value an error echoes: an operator may paste a whole file into a variable. */
const SHOWN_MAX = 64;

/** A bad value as an error line shows it: quoted when it holds spaces or controls, cut when long, masked when secret. */
export function shown(value: unknown, path: string): string {
  if (OPTIONS.some((o) => o.secret && path.startsWith(o.path))) return '***';
  const text = String(value);
  const cut = cutValue(text);
  return /^[\x21-\x7e]+$/.test(text) ? cut : JSON.stringify(cut);
}

/** A value an error line echoes, cut at SHOWN_MAX characters. */
export function cutValue(text: string): string {
  return text.length > SHOWN_MAX ? `${text.slice(0, SHOWN_MAX)}…` : text;
}

/** Keeps where each of a loaded configuration's settings came from, for optionSource. */
export function keepSources(config: object, source: ReadonlyMap<string, string>): void {
  SOURCES.set(config, source);
}

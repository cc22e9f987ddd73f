import type { TSchema } from '@sinclair/typebox';
import { ConfigError } from './errors.js';
import { bool, type OptionSpec } from './options.js';
import { ConfigSchema } from './schema.js';

/** The schema of the setting at a dotted path, or undefined when there is none. */
export function schemaAt(root: TSchema, path: string): TSchema | undefined {
  let s: TSchema | undefined = root;
  for (const key of path.split('.')) s = (s?.properties as Record<string, TSchema> | undefined)?.[key];
  return s;
}

/** What a setting's type is called in the sample and the README (oslo-config-generator's words). */
export function typeName(s: TSchema): string {
  if (s.type === 'integer') return 'integer value';
  if (s.type === 'boolean') return 'boolean value';
  if (s.type === 'array') return 'list value';
  if (Array.isArray(s.anyOf)) return `string value, one of ${(s.anyOf as TSchema[]).map((x) => String(x.const)).join(', ')}`;
  return 'string value';
}

/**
 * A setting's value from text (the environment, the config file): integers, oslo's booleans,
 * comma-separated lists (every occurrence of an option repeated in the file), strings. Throws a
 * plain Error saying what is wrong; the caller names where the text came from.
 */
export function fromText(s: TSchema, values: readonly string[], scale = 1): unknown {
  const last = values.at(-1) ?? '';
  if (s.type === 'array')
    return values
      .flatMap((v) => v.split(/[,\n]/))
      .map((x) => x.trim())
      .filter(Boolean);
  if (s.type === 'boolean') return bool(last);
  if (s.type === 'integer') {
    const n = Number(last.trim());
    if (last.trim() === '' || !Number.isFinite(n) || !Number.isInteger(n * scale))
      throw new ConfigError(`"${last}" is not ${scale === 1 ? 'an integer' : 'a number'}`);
    return n * scale;
  }
  return last;
}

/**
 * An option's value from what the operator wrote (the file's lines, or a variable), or a
 * ConfigError naming where it was written; a secret's text is never echoed.
 */
export function optionValue(spec: OptionSpec, values: string[], where: string, file: boolean): unknown {
  try {
    if (file && spec.fromFile) return spec.fromFile(values.at(-1) ?? '');
    if (file && spec.multi) return values.join('\n');
    return fromText(schemaAt(ConfigSchema, spec.path)!, values, file ? spec.scale : 1);
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${where}: ${spec.secret ? 'not a valid value' : (err as Error).message}`);
  }
}

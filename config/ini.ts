import { readFileSync } from 'node:fs';
import { decode } from 'ini';
import { ConfigError } from './errors.js';

/** One config file as read: section → option → raw values (one per time the option appears). */
export type IniFile = Map<string, Map<string, string[]>>;

// Joins the lines of a multi-line value until `ini` has parsed the line; then becomes '\n' again.
const JOIN = '\uE000';

/**
 * Reads an oslo.config-style INI file (what `cyborg.conf` is for OpenStack operators).
 *
 * `ini` parses each section; around it, the rules oslo.config has and `ini` lacks: a line that
 * starts with whitespace continues the previous value (joined with a newline), an option given
 * twice keeps both values (a MultiStrOpt), `#` and `;` start a comment only at the start of a line
 * (a password may contain them), and option names are per section. A line that is none of
 * section, option, continuation, comment or blank stops the program, naming file and line.
 */
export function parseIni(text: string, file: string): IniFile {
  const chunks: { section: string; lines: string[] }[] = [{ section: 'DEFAULT', lines: [] }];
  let current = chunks[0]!;
  let lastWasOption = false;
  text.split(/\r?\n/).forEach((line, i) => {
    if (/^\s*$/.test(line) || /^[#;]/.test(line)) {
      lastWasOption = lastWasOption && /^\s*$/.test(line) ? false : lastWasOption;
      return;
    }
    if (/^\s/.test(line)) {
      if (!lastWasOption) throw new ConfigError(`${file}:${i + 1}: an indented line continues a value, but no option precedes it`);
      if (/^\s*[#;]/.test(line)) return;
      current.lines[current.lines.length - 1] += JOIN + escape(line.trim());
      return;
    }
    const header = /^\[([^\]]+)\]\s*$/.exec(line);
    if (header) {
      current = { section: header[1]!.trim(), lines: [] };
      chunks.push(current);
      lastWasOption = false;
      return;
    }
    const kv = /^([^=:]+?)\s*[=:]\s*(.*)$/.exec(line);
    if (!kv) throw new ConfigError(`${file}:${i + 1}: "${line}" is not a section header, an option = value, or a comment`);
    const value = kv[2]!.trim();
    current.lines.push(`${kv[1]!.trim()} = ${isQuoted(value) ? value : escape(value)}`);
    lastWasOption = true;
  });
  const out: IniFile = new Map();
  for (const { section, lines } of chunks) {
    const options = out.get(section) ?? new Map<string, string[]>();
    out.set(section, options);
    const parsed = decode(lines.join('\n'), { bracketedArray: false }) as Record<string, unknown>;
    for (const [name, v] of Object.entries(parsed)) {
      const values = (Array.isArray(v) ? v : [v]).map((x) => String(x ?? '').replaceAll(JOIN, '\n'));
      options.set(name, [...(options.get(name) ?? []), ...values]);
    }
  }
  return out;
}

export function readIniFile(path: string): IniFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read the config file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseIni(text, path);
}

/** `ini` cuts a value at an unescaped `;` or `#` and reads `\`: escape them so the value stays as written. */
function escape(value: string): string {
  return value.replace(/[\\;#]/g, (c) => `\\${c}`);
}

function isQuoted(v: string): boolean {
  return v.length >= 2 && (v[0] === '"' || v[0] === "'") && v.at(-1) === v[0];
}

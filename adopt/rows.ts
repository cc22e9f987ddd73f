import { BOUND, STORABLE_PATTERN } from '../model/index.js';
import { AdoptError, AdoptExit } from './errors.js';
import type { CyborgTable } from './read.js';
import type { Row } from './source.js';

const STORABLE = new RegExp(STORABLE_PATTERN);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * One source row's fields, each read with its bounds: a value we would refuse to store stops the
 * adoption before anything is written, in one line naming the table, the row and the column.
 */
export class RowReader {
  constructor(
    private readonly table: CyborgTable,
    private readonly row: Row,
  ) {}

  /** `devices row id 3 (uuid …)`: how messages name this row. */
  get name(): string {
    const uuid = typeof this.row.uuid === 'string' && STORABLE.test(this.row.uuid) && this.row.uuid.length <= 64 ? ` (uuid ${this.row.uuid})` : '';
    return `${this.table} row id ${String(this.row.id)}${uuid}`;
  }

  fail(what: string): never {
    throw new AdoptError(`${this.name}: ${what}`, AdoptExit.badRow);
  }

  int(col: string): number {
    const v = this.row[col];
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < 0 || n > 2 ** 31 - 1) this.fail(`${col} ${JSON.stringify(v)} is not an integer from 0 to 2^31-1`);
    return n;
  }

  intOrNull(col: string): number | null {
    return this.row[col] === null || this.row[col] === undefined ? null : this.int(col);
  }

  text(col: string, max: number = BOUND.name): string {
    const v = this.row[col];
    if (typeof v !== 'string') this.fail(`${col} is ${v === null ? 'NULL' : typeof v}, not text`);
    if (!STORABLE.test(v)) this.fail(`${col} holds a NUL or an unpaired surrogate, which cannot be stored`);
    if (v.length > max) this.fail(`${col} is ${v.length} characters long, more than ${max}`);
    return v;
  }

  textOrNull(col: string, max: number = BOUND.name): string | null {
    return this.row[col] === null || this.row[col] === undefined ? null : this.text(col, max);
  }

  uuid(col: string): string {
    const v = this.text(col, 64);
    if (!UUID.test(v)) this.fail(`${col} ${JSON.stringify(v)} is not a uuid`);
    return v.toLowerCase();
  }

  uuidOrNull(col: string): string | null {
    return this.row[col] === null || this.row[col] === undefined || this.row[col] === '' ? null : this.uuid(col);
  }

  bool(col: string): boolean {
    const v = this.row[col];
    if (v === true || v === 1 || v === '1') return true;
    if (v === false || v === 0 || v === '0' || v === null) return false;
    return this.fail(`${col} ${JSON.stringify(v)} is not a boolean`);
  }

  oneOf<T extends string>(col: string, values: readonly T[]): T {
    const v = this.text(col);
    if (!(values as readonly string[]).includes(v)) this.fail(`${col} ${JSON.stringify(v)} is none of ${values.join(', ')}`);
    return v as T;
  }

  /** A DATETIME / timestamp as ISO text (Cyborg stores UTC without a zone); now when NULL. */
  time(col: string): string {
    const v = this.row[col];
    if (v === null || v === undefined) return new Date().toISOString();
    const d = v instanceof Date ? v : new Date(`${String(v).replace(' ', 'T')}Z`);
    if (Number.isNaN(d.getTime())) this.fail(`${col} ${JSON.stringify(v)} is not a time`);
    return d.toISOString();
  }

  timeOrNull(col: string): string | null {
    return this.row[col] === null || this.row[col] === undefined ? null : this.time(col);
  }
}

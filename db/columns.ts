import { sql, type RawBuilder } from 'kysely';

/**
 * Bind-array columns for `FROM ROWS FROM (…) AS x(…)`, which zips set-returning functions row by
 * row as a multi-array `unnest` does.
 *
 * Why text and JSON go as one JSON array parameter rather than a text[]: pg builds a text[]
 * literal in JavaScript, escaping every element with two regex passes, for every row of a fleet's
 * inventories and every accelerator's context; JSON.stringify of an array is native. Numbers and
 * booleans need no escaping, but pg would still build their literal by string concatenation,
 * element by element (garbage in proportion to the rows): their literal is one join.
 */
type Column = RawBuilder<unknown>;

/** A text column (null elements are SQL NULL). */
export const textCol = (values: readonly (string | null)[]): Column => sql`json_array_elements_text(${JSON.stringify(values)}::json)`;

/** A jsonb column: each element is a value, serialized once with the whole array. */
export const jsonbCol = (values: readonly unknown[]): Column => sql`jsonb_array_elements(${JSON.stringify(values)}::jsonb)`;

/** An int column (integers only: the literal is their decimal join). */
export const intCol = (values: readonly number[]): Column => sql`unnest(${`{${values.join(',')}}`}::int[])`;

export const boolCol = (values: readonly boolean[]): Column => sql`unnest(${`{${values.map((b) => (b ? 't' : 'f')).join(',')}}`}::boolean[])`;

/** `rows from (c1, c2, …)`: alias it with the column names, `as x(a, b, …)`. */
export const rowsFrom = (...cols: Column[]): Column => sql`rows from (${sql.join(cols)})`;

import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { StateFile, type StateFileProblem } from './state-file.js';

const LAYOUTS = Type.Record(Type.String(), Type.Array(Type.String()));

function fixture(): { dir: string; file: StateFile<Record<string, string[]>>; problems: StateFileProblem[] } {
  const dir = mkdtempSync(join(tmpdir(), 'state-file-'));
  const problems: StateFileProblem[] = [];
  return { dir, problems, file: new StateFile(dir, 'layouts.json', LAYOUTS, (p) => problems.push(p)) };
}

/** The drivers' on-disk choices (MIG layouts, VF counts, FPGA images): one codec, trusted only when it checks. */
describe('state file', () => {
  it('keeps what was written, versioned, across a new reader', async () => {
    const { dir, file } = fixture();
    await file.update(() => ({ '0000:3b:00.0': ['1g.10gb', '1g.10gb'] }));
    expect(JSON.parse(readFileSync(join(dir, 'layouts.json'), 'utf8'))).toEqual({ version: 1, data: { '0000:3b:00.0': ['1g.10gb', '1g.10gb'] } });
    const again = new StateFile<Record<string, string[]>>(dir, 'layouts.json', LAYOUTS);
    expect(await again.read()).toEqual({ '0000:3b:00.0': ['1g.10gb', '1g.10gb'] });
  });

  it('reads a file written before the envelope when it fits the schema', async () => {
    const { dir, file, problems } = fixture();
    writeFileSync(join(dir, 'layouts.json'), JSON.stringify({ '0000:3b:00.0': ['3g.40gb'] }));
    expect(await file.read()).toEqual({ '0000:3b:00.0': ['3g.40gb'] });
    expect(problems).toEqual([]);
  });

  it.each([
    ['a torn write', '{"version":1,"data":{"0000:3b', /not JSON/, 'corrupt'],
    ['a record of the wrong shape', JSON.stringify({ version: 1, data: { '0000:3b:00.0': 7 } }), /not a valid record: \/0000:3b:00.0/, 'invalid'],
    ['another version', JSON.stringify({ version: 2, data: {} }), /version 2/, 'v2'],
  ])('sets %s aside, reports it and starts from nothing', async (_what, text, reason, suffix) => {
    const { dir, file, problems } = fixture();
    writeFileSync(join(dir, 'layouts.json'), text);
    expect(await file.read()).toEqual({});
    expect(problems).toHaveLength(1);
    expect(problems[0]!.reason).toMatch(reason);
    expect(existsSync(join(dir, `layouts.json.${suffix}`))).toBe(true);
    expect(existsSync(join(dir, 'layouts.json'))).toBe(false);
    // The next choice is written afresh.
    await file.update((cur) => ({ ...cur, '0000:3b:00.0': ['7g.80gb'] }));
    expect(await file.read()).toEqual({ '0000:3b:00.0': ['7g.80gb'] });
  });
});

import { describe, expect, it } from 'vitest';
import { cyborgProcess, scratchDir, startCyborg } from './spawn.js';

describe('two all-in-ones on one data directory', () => {
  it("the second refuses at once naming the first one's pid (exit 6) and the variable that chose the directory, and the first goes on", async () => {
    const cwd = scratchDir();
    const first = startCyborg(['all-in-one', '--port', '0'], { cwd, env: { CYBORG_DATA_DIR: 'state' } });
    try {
      const up = JSON.parse(await first.waitFor(/^\{.*cyborg all-in-one is up/, 120_000)) as { pid: number; url: string };
      const second = await cyborgProcess(['all-in-one', '--port', '0'], { cwd, env: { CYBORG_DATA_DIR: 'state' } });
      expect(second.code).toBe(6);
      expect(second.stderr).toBe(
        `cyborg: environment variable CYBORG_DATA_DIR = ${cwd}/state: its embedded database is in use by process ${up.pid} (${cwd}/state/cyborg.lock); stop that process, or give this one another data directory\n`,
      );
      expect((await fetch(`${up.url}/readyz`)).status).toBe(200);
    } finally {
      await first.kill();
    }
  });
});

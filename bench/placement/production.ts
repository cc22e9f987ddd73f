import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const PEER = resolve(import.meta.dirname, '../../../shared/peers/placement');

/**
 * Placement as production runs it: several uWSGI processes on PostgreSQL, on a port and state
 * dir of its own. The starter never wipes a PostgreSQL database, so `fresh()` drops and
 * re-creates it and restarts Placement: every measurement starts from an empty Placement.
 */
export class ProductionPlacement {
  readonly url: string;

  constructor(private readonly o: { port: number; processes: number; threads: number; database: string; pgUrl: string }) {
    this.url = `http://127.0.0.1:${o.port}`;
  }

  get shape(): string {
    return `${this.o.processes} uWSGI processes × ${this.o.threads} threads on PostgreSQL (${this.o.database})`;
  }

  async fresh(): Promise<void> {
    await this.stop();
    await this.admin(`DROP DATABASE IF EXISTS ${this.o.database} WITH (FORCE)`, `CREATE DATABASE ${this.o.database}`);
    await this.run('start.sh');
  }

  async stop(): Promise<void> {
    await this.run('stop.sh');
  }

  /** Stopped, its database dropped and its state dir removed: nothing of the run is left. */
  async remove(): Promise<void> {
    await this.run('stop.sh', { PLACEMENT_CLEAN: '1' });
    await this.admin(`DROP DATABASE IF EXISTS ${this.o.database} WITH (FORCE)`);
  }

  private async admin(...sql: string[]): Promise<void> {
    const admin = new pg.Client({ connectionString: this.o.pgUrl });
    await admin.connect();
    try {
      for (const q of sql) await admin.query(q);
    } finally {
      await admin.end();
    }
  }

  private async run(script: string, extra: Record<string, string> = {}): Promise<void> {
    const db = new URL(this.o.pgUrl);
    await promisify(execFile)('bash', [`${PEER}/${script}`], {
      env: {
        ...process.env,
        PLACEMENT_PORT: String(this.o.port),
        PLACEMENT_STATE_DIR: `/tmp/placement-bench-${this.o.port}`,
        PLACEMENT_PROCESSES: String(this.o.processes),
        PLACEMENT_THREADS: String(this.o.threads),
        // Four Python processes take a while to import Placement on a loaded 2-core machine.
        PLACEMENT_START_TIMEOUT: '240',
        PLACEMENT_DB_URL: `postgresql+psycopg2://${db.username || 'postgres'}@${db.hostname}:${db.port || 5432}/${this.o.database}`,
      },
      timeout: 180_000,
    });
  }
}

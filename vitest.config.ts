import { configDefaults, defineConfig } from 'vitest/config';

// Two projects: `unit` (pure code, tests beside it) and `integration` (stories against real
// services under test/). `npm test` runs both through test/run.ts, which probes the services.
export default defineConfig({
  test: {
    globalSetup: ['./test/global-setup.ts'],
    // Tests use their own config: the operator's OS_* and cyborg variables are dropped first.
    setupFiles: ['./test/own-env-setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          // Tests beside the code in every room, plus the import-rule check and the function-size count, which need no service.
          include: ['**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/*/**', 'ui/**'],
          testTimeout: 20_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          // The sysfs fixture trees hold symlink loops, as real sysfs does: the glob must not walk them.
          exclude: [...configDefaults.exclude, 'test/fixtures/**', 'test/architecture.test.ts', 'test/function-size.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // expect.poll's own default (1 s) is a browser story's flake on a loaded two-core machine.
          expect: { poll: { timeout: 10_000 } },
        },
      },
    ],
  },
});

import { dropOperatorSettings } from './support/own-env.js';

// Every test file, whether `npm test` or `npx vitest run` started it: tests use their own config,
// never the shell's (test/support/own-env.ts).
dropOperatorSettings();

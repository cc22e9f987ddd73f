import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

// The page is served by the api role under /ui/ (api/routes/ui.ts). JSX goes to Preact through
// Vite's own transformer: no Babel preset needed.
export default defineConfig({
  root: here,
  base: '/ui/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 2000,
  },
  server: {
    // `npx vite ui` during development: the API runs on its own port (npm start).
    proxy: { '/cyborg': { target: 'http://127.0.0.1:6680', changeOrigin: false } },
  },
});

import { fileURLToPath } from 'node:url';

/** A GPU compute host's sysfs as the generic driver reads it (symlink loops included, as real sysfs has). */
export const GPU_TREE = fileURLToPath(new URL('../fixtures/sysfs/gpu-host', import.meta.url));

/**
 * Fails loudly if the tests would run on an older Node than the project needs — the trap is
 * `npm install --ignore-scripts`, which never installs the Node 24 the project brings.
 */
export default function setup(): void {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 22) {
    throw new Error(
      `tests need Node.js >= 22, but run on ${process.versions.node}. Run them through \`npm test\` after a plain \`npm install\` ` +
        '(the devDependency "node" brings Node 24; --ignore-scripts skips it).',
    );
  }
}

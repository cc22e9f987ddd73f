// The image's HEALTHCHECK: 0 when this container's role answers GET /readyz with 200.
// One image runs any role, each on its own port (the all-in-one 6680, api 6666, conductor 9180,
// agent 9181; CYBORG_PORT / CYBORG_METRICS_PORT first where set): the first that accepts the
// connection is this container's role. CYBORG_HEALTH_URL names another. The all-in-one's 6680
// was missing: its container was never healthy (issue 42).
// node:http, not fetch: fetch refuses Cyborg's 6666 (a port browsers block).
import { get } from 'node:http';

const urls = process.env.CYBORG_HEALTH_URL
  ? [process.env.CYBORG_HEALTH_URL]
  : [...new Set([process.env.CYBORG_PORT, process.env.CYBORG_METRICS_PORT, 6680, 6666, 9180, 9181].filter((p) => p !== undefined && p !== ''))].map(
      (p) => `http://127.0.0.1:${p}/readyz`,
    );

function probe(url) {
  return new Promise((resolve) => {
    const req = get(url, { timeout: 4000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(undefined));
  });
}

for (const url of urls) {
  const status = await probe(url);
  if (status === undefined) continue;
  process.stdout.write(`${url}: ${status}\n`);
  process.exit(status === 200 ? 0 : 1);
}
process.stdout.write(`nothing answers at ${urls.join(', ')}\n`);
process.exit(1);

/**
 * The sse section's clients, in a process of their own: `sse-clients.ts <api url> <n>` opens n
 * `/cyborg/v1/events` streams, reads (and drops) what they send, prints
 * `connected <open> refused <refused>` once all answered, and holds them until killed.
 */
import { Agent, request } from 'undici';

const [url, n] = [process.argv[2]!, Number(process.argv[3])];
const dispatcher = new Agent({ connections: null, bodyTimeout: 0, headersTimeout: 30_000 });
let open = 0;
let refused = 0;
await Promise.all(
  Array.from({ length: n }, async () => {
    try {
      const res = await request(`${url}/cyborg/v1/events`, { dispatcher, headers: { 'x-auth-token': 'admin', accept: 'text/event-stream' } });
      if (res.statusCode !== 200) {
        refused++;
        await res.body.dump();
        return;
      }
      open++;
      res.body.on('data', () => undefined);
      res.body.on('error', () => undefined);
    } catch {
      refused++;
    }
  }),
);
console.log(`connected ${open} refused ${refused}`);
setInterval(() => undefined, 60_000);

/**
 * The slow readers, in a process of their own (their sockets and buffers are not the api's):
 * `slow-reader-clients.ts <api url> <n> <path>` opens n connections, sends each a GET of `path`,
 * reads nothing at all (the socket is paused: the kernel's buffers fill, then the api's must
 * wait), prints `sent <n>` and holds them until killed.
 */
import { connect } from 'node:net';

const [url, n, path] = [new URL(process.argv[2]!), Number(process.argv[3]), process.argv[4]!];
const sockets = await Promise.all(
  Array.from(
    { length: n },
    () =>
      new Promise<ReturnType<typeof connect>>((resolve, reject) => {
        const s = connect({ host: url.hostname, port: Number(url.port) }, () => {
          s.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nX-Auth-Token: admin\r\nAccept: application/json\r\n\r\n`);
          // Never read: what a stuck or hostile client does.
          s.pause();
          resolve(s);
        });
        s.once('error', reject);
      }),
  ),
);
console.log(`sent ${sockets.length}`);
setInterval(() => undefined, 60_000);

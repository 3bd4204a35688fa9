import { createServer, connect, type AddressInfo, type Socket } from 'node:net';

/** A TCP relay to Redis whose traffic can be held, both ways, and let go again. */
export async function holdableRelay(target: URL) {
  const pairs: [Socket, Socket][] = [];
  let held = false;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) s.on('error', () => undefined);
    client.pipe(upstream).pipe(client);
    pairs.push([client, upstream]);
    if (held) for (const s of [client, upstream]) s.pause();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as AddressInfo).port);
  url.hostname = '127.0.0.1';
  return {
    url: url.toString(),
    hold: () => {
      held = true;
      for (const pair of pairs) for (const s of pair) s.pause();
    },
    release: () => {
      held = false;
      for (const pair of pairs) for (const s of pair) s.resume();
    },
    close: () => {
      for (const pair of pairs) for (const s of pair) s.destroy();
      server.close();
    },
  };
}

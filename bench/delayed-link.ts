// A loopback TCP link that holds every chunk `delayMs` milliseconds in each direction before passing
// it on: a database across a network, for the benchmarks that differ by round trips
// (kept-vs-read.ts, BENCH_DB_DELAY_MS). Node's timers keep the chunks' order (equal delays fire in
// the order they were set). A socket's failure closes both ends of its link; the link never ends
// the process.

import net from "node:net";

export interface DelayedLink {
  /** The loopback port that reaches `target` through the delay. */
  port: number;
  close(): Promise<void>;
}

export async function delayedLink(
  target: { host: string; port: number },
  delayMs: number,
): Promise<DelayedLink> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    const pass = (from: net.Socket, to: net.Socket) => {
      sockets.add(from);
      from.on("close", () => {
        sockets.delete(from);
        setTimeout(() => to.end(), delayMs);
      });
      from.on("error", closeBoth);
      from.on("data", (chunk) =>
        setTimeout(() => {
          if (!to.destroyed) to.write(chunk);
        }, delayMs),
      );
    };
    pass(client, upstream);
    pass(upstream, client);
  });
  server.on("error", (err) => process.stderr.write(`bench: the delayed link failed: ${String(err)}\n`));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("delayed link: no port");
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

// HTTP/1.1 over a plain socket, for tests that need the exact bytes on the wire: targets that an
// HTTP client would normalise (a `#`, dot segments, absolute form), bytes no client would send, and
// clients that send slowly or not at all. Loopback only; every wait is bounded.

import net from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses one response out of what a server sent before closing; null if it is not one. */
export function parseResponse(bytes: Buffer): RawResponse | null {
  const end = bytes.indexOf("\r\n\r\n");
  if (end === -1) return null;
  const [statusLine = "", ...lines] = bytes.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine);
  if (m === null) return null;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? "0");
  return { status: Number(m[1]), headers, body: bytes.subarray(end + 4, end + 4 + length).toString("utf8") };
}

/**
 * Sends `head` (the request line and headers, CRLF-separated, without the blank line) and `body`
 * as given, with `Connection: close`, and resolves with the response once the server closes.
 */
export function rawRequest(
  port: number,
  head: string | Buffer,
  body: Buffer | string = "",
  timeoutMs = 10_000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on("data", (d) => chunks.push(d));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      const parsed = parseResponse(Buffer.concat(chunks));
      if (parsed === null) reject(new Error("the server closed without a response"));
      else resolve(parsed);
    });
    const headBytes = Buffer.isBuffer(head) ? head : Buffer.from(head, "latin1");
    const bodyBytes = Buffer.isBuffer(body) ? body : Buffer.from(body, "utf8");
    socket.write(Buffer.concat([headBytes, Buffer.from("\r\nConnection: close\r\n\r\n"), bodyBytes]));
  });
}

/** A socket held open by a test; `closedAt` is set when the server closes it. */
export interface HeldSocket {
  readonly socket: net.Socket;
  /** Everything received so far. */
  received(): Buffer;
  /** ms since the socket was opened when it closed; null while open. */
  closedAfterMs(): number | null;
  closed: Promise<void>;
}

export function holdSocket(port: number, onConnect: (socket: net.Socket) => void = () => {}): HeldSocket {
  const opened = Date.now();
  const socket = net.connect(port, "127.0.0.1", () => onConnect(socket));
  const chunks: Buffer[] = [];
  let closedAfter: number | null = null;
  socket.on("data", (d) => chunks.push(d));
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) =>
    socket.on("close", () => {
      closedAfter = Date.now() - opened;
      resolve();
    }),
  );
  return {
    socket,
    received: () => Buffer.concat(chunks),
    closedAfterMs: () => closedAfter,
    closed,
  };
}

/** Writes `bytes` one at a time, one every `everyMs`, until the socket closes or they run out. */
export function trickle(socket: net.Socket, bytes: Buffer, everyMs: number): () => void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= bytes.length) {
      clearInterval(timer);
      return;
    }
    socket.write(bytes.subarray(i, i + 1));
    i++;
  }, everyMs);
  return () => clearInterval(timer);
}

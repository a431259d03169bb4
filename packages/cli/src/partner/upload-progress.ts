// Upload progress for `document upload`. The SDK writes the multipart body itself (the signature
// covers its exact bytes) and hands it to its HTTP port in one piece; this port sends those same
// bytes as a stream with their Content-Length, counting what fetch has taken, and reports it. The
// line is drawn on stderr only when stderr is a terminal, so scripts and --json stdout never see it.

import type { FetchPort, HttpRequest } from "@counterpart/sdk";

const chunkBytes = 64 * 1024;

/** A FetchPort that streams a byte body in chunks and calls `report(sent, total)` after each. */
export function progressFetch(
  report: (sent: number, total: number) => void,
  inner: typeof fetch = fetch,
): FetchPort {
  return (url: string, init: HttpRequest) => {
    const body = init.body;
    if (!(body instanceof Uint8Array) || body.byteLength === 0) return inner(url, init);
    let offset = 0;
    report(0, body.byteLength);
    const stream = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (offset >= body.byteLength) {
            controller.close();
            return;
          }
          const end = Math.min(offset + chunkBytes, body.byteLength);
          controller.enqueue(body.slice(offset, end));
          offset = end;
          report(offset, body.byteLength);
        },
      },
      { highWaterMark: 0 },
    );
    return inner(url, {
      method: init.method,
      headers: { ...init.headers, "Content-Length": String(body.byteLength) },
      body: stream,
      duplex: "half",
      signal: init.signal,
    });
  };
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** One progress line on a terminal, redrawn in place: "uploading front.png: 42% (12.0 KiB of 28.6 KiB)". */
export class ProgressLine {
  readonly #stream: NodeJS.WriteStream;
  readonly #label: string;
  #drawn = false;
  #lastPercent = -1;

  constructor(stream: NodeJS.WriteStream, label: string) {
    this.#stream = stream;
    this.#label = label;
  }

  update(sent: number, total: number): void {
    const percent = total === 0 ? 100 : Math.floor((sent * 100) / total);
    if (percent === this.#lastPercent) return;
    this.#lastPercent = percent;
    this.#stream.write(`\r${this.#label}: ${percent}% (${size(sent)} of ${size(total)})\x1b[K`);
    this.#drawn = true;
  }

  /** Ends the line, so that whatever is printed next starts on its own line. */
  end(): void {
    if (this.#drawn) this.#stream.write("\n");
    this.#drawn = false;
  }
}

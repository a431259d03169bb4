// A throwaway S3-compatible server for tests (s3rver, from the npm registry: real HTTP, real
// SigV4 signature checks, objects on disk), run as a child process by testing/s3-server.ts so
// that a test can stop it (SIGSTOP: a server that accepts and never answers) or kill it. Arguments:
// the data folder, then the bucket to create. Prints one JSON line, {"port": N}, once listening
// on 127.0.0.1; exits when its standard input closes (the test process is gone) or on SIGTERM.

import { createRequire } from "node:module";

interface S3rverInstance {
  run(): Promise<{ port: number }>;
}
type S3rverConstructor = new (options: Record<string, unknown>) => S3rverInstance;

const S3rver = createRequire(import.meta.url)("@20minutes/s3rver") as S3rverConstructor;
const [directory, bucket] = process.argv.slice(2);
if (directory === undefined || bucket === undefined) {
  process.stderr.write("usage: s3-server-main.ts DIRECTORY BUCKET\n");
  process.exit(2);
}

const server = new S3rver({
  address: "127.0.0.1",
  port: 0,
  silent: true,
  directory,
  // Path-style addressing only: the bucket is never a host name on the loopback address.
  vhostBuckets: false,
  configureBuckets: [{ name: bucket, configs: [] }],
});
const { port } = await server.run();
process.stdout.write(`${JSON.stringify({ port })}\n`);

// Nothing to keep: the test removes the data folder.
const stop = () => process.exit(0);
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();

// A reader that goes away (`counterpart partner list | head -1`, a closed terminal, a supervisor
// that stopped reading a service's log) closes stdout or stderr under the process. A write then
// fails with EPIPE, emitted as an 'error' event on the stream; with no listener that would end the
// process with a stack trace, and for `serve` take the service down. Output nobody reads is
// dropped instead: the command still finishes and exits with its own code.

export function ignoreClosedOutput(): void {
  // Any failure of our own output is dropped: there is nowhere left to report it.
  process.stdout.on("error", () => {});
  process.stderr.on("error", () => {});
}

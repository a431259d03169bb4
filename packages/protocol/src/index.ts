// The wire contract shared by the server, the SDK and the CLI.

export * from "./enums.ts";
export * from "./errors.ts";
export * from "./money.ts";
export * from "./signing.ts";

// pino JSON logs. Secrets and client personal data are redacted wherever they appear in a logged
// object, to three levels deep, as a second line of defence: request bodies are never logged.

import pino, { type Logger } from "pino";
import type { LogLevel } from "../config/config.ts";

const sensitiveKeys = [
  "authorization",
  '"x-signature"',
  "admin_token",
  "adminToken",
  "private_key",
  "privateKey",
  "token",
  "name",
  "email",
  "phone",
  "birth_date",
  "government_id_number",
  "national_number",
  "residency_visa_number",
  "address",
];

export const redactPaths = sensitiveKeys.flatMap((k) => {
  const key = k.startsWith('"') ? `[${k}]` : `.${k}`;
  return [k.startsWith('"') ? `*[${k}]` : k, `*${key}`, `*.*${key}`, `*.*.*${key}`];
});

export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: redactPaths, censor: "[redacted]" },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

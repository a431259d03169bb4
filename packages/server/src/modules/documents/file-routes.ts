// GET /v1/files/{key}?expires=…&signature=…: the download behind a document's signed link. Public
// (no partner headers): the link itself is the credential. Any link that is not valid now, altered,
// expired, or for a file that is gone, is the spec's 404, so a guess learns nothing.

import type { FastifyInstance } from "fastify";
import { HttpError } from "../../http/http-error.ts";
import { type DocumentsService, filesPath } from "./documents-service.ts";

function single(value: unknown): string {
  return typeof value === "string" ? value : "";
}

export function fileRoutes(app: FastifyInstance, documents: DocumentsService): void {
  app.get<{ Params: { key: string }; Querystring: Record<string, unknown> }>(
    `${filesPath}/:key`,
    async (request, reply) => {
      const found = await documents.download(
        request.params.key,
        single(request.query.expires),
        single(request.query.signature),
      );
      if (found === null) throw new HttpError("not_found");
      // Served as a download that no browser renders or sniffs: the bytes came from a partner.
      return reply
        .header("content-type", found.contentType)
        .header("content-disposition", "attachment")
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", "default-src 'none'; sandbox")
        .header("cache-control", "private, no-store")
        .send(found.bytes);
    },
  );
}

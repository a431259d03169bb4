// GET /v1/files/{key}?expires=…&signature=…: the download behind a document's signed link. Public
// (no partner headers): the link itself is the credential. Any link that is not valid now, altered,
// expired, or for a file that is gone, is the contract's 404, so a guess learns nothing. The file
// store is asked only for a valid link: its outage is then a 503 (retry), never a 404.

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { HttpError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { type DocumentsService, filesPath } from "./documents-service.ts";
import { acceptedTypes as documentContentTypes } from "./documents-validation.ts";

function single(value: unknown): string {
  return typeof value === "string" ? value : "";
}

export function fileRoutes(app: FastifyInstance, documents: DocumentsService): void {
  app.get<{ Params: { key: string }; Querystring: Record<string, unknown> }>(
    `${filesPath}/:key`,
    {
      config: { unreadableInputIsNotFound: true },
      schema: {
        tags: ["documents"],
        operationId: "downloadDocumentFile",
        summary: "Download a document file",
        description:
          "The target of a document's `front_file` and `back_file` links: use the URL exactly as " +
          "given, within 900 seconds, without partner headers (the link is the credential). A " +
          "link that is altered, expired or for a file that is gone is a 404; a 503 means the file " +
          "could not be read just now (retry the same link while it is valid).",
        params: Type.Object({ key: Type.String() }),
        response: {
          200: {
            description: "The file's bytes, as a download.",
            content: Object.fromEntries(
              documentContentTypes.map((type) => [
                type,
                { schema: { type: "string", format: "binary", contentMediaType: type } },
              ]),
            ),
          },
          ...errorResponses(["not_found", "service_unavailable"]),
        },
      },
    },
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

// The partner's document endpoints (docs/decisions.md, "Documents"). Uploads are multipart: the body was read whole
// (11 MiB at most) and authenticated before this handler parses it; see http/multipart.ts.

import type { FieldError } from "@counterpart/protocol";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type Static, Type } from "typebox";
import { limits } from "../../config/limits.ts";
import { HttpError, validationError } from "../../http/http-error.ts";
import { type MultipartFailure, parseMultipart } from "../../http/multipart.ts";
import { documentedBody, errorResponses } from "../../http/openapi.ts";
import { PageQuery } from "../../http/query-schemas.ts";
import { DocumentPageSchema, DocumentSchema } from "./document-views.ts";
import type { DocumentsService } from "./documents-service.ts";
import { checkUpload, documentTypes } from "./documents-validation.ts";

const ClientParams = Type.Object({ partner_client_id: Type.String() });
const DocumentParams = Type.Object({ partner_client_id: Type.String(), document_id: Type.String() });
const One = Type.Object({ result: DocumentSchema });

const ListQuery = Type.Object({
  type: Type.Optional(Type.Array(Type.Enum(documentTypes), { maxItems: 20 })),
  ...PageQuery,
});

const documentFile = (description: string) =>
  Type.String({ format: "binary", contentMediaType: "application/octet-stream", description });

/** The upload's parts, as documented; the handler reads them itself (checkUpload). */
const UploadForm = Type.Object({
  type: Type.Enum(documentTypes),
  front_file: documentFile("a whole JPEG, PNG, HEIC, HEIF or PDF file (judged by content), at most 5 MiB"),
  back_file: Type.Optional(documentFile("the back of a two-sided document; same rules")),
});

const hostPattern = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * The origin download links point at: the one the partner called (the Host header, and the
 * protocol; behind a proxy in TRUST_PROXY, its X-Forwarded-Host and -Proto), so links work the
 * same way as the request did. A Host that is not a plain host name gives "localhost".
 */
export function requestOrigin(request: FastifyRequest): string {
  const host = request.host;
  return `${request.protocol}://${typeof host === "string" && hostPattern.test(host) ? host : "localhost"}`;
}

export function documentsRoutes(app: FastifyInstance, documents: DocumentsService): void {
  app.post<{ Params: { partner_client_id: string } }>(
    "/v1/partner/clients/:partner_client_id/documents",
    {
      schema: {
        tags: ["documents"],
        operationId: "uploadDocument",
        summary: "Upload a KYC document",
        description:
          "multipart/form-data with `type`, `front_file` and optionally `back_file`. The body is " +
          "signed like any other: BODY_HASH is the SHA-256 of the exact multipart bytes sent. " +
          'Problems with the parts are a 422 at `["body", field]`.',
        params: ClientParams,
        response: { 201: One, ...errorResponses(["invalid_client", "service_unavailable"]) },
      },
      config: {
        multipartBodyBytesMax: limits.multipartBodyBytesMax,
        swaggerTransform: documentedBody("multipart/form-data", UploadForm),
      },
    },
    async (request, reply) => {
      const parsed = await parseMultipart(
        request.rawBody ?? Buffer.alloc(0),
        request.headers["content-type"],
        {
          fileBytesMax: limits.documentFileBytesMax,
          filesMax: limits.multipartFilesMax,
          fieldsMax: limits.multipartFieldsMax,
          fieldBytesMax: limits.multipartFieldBytesMax,
        },
      );
      if (!parsed.ok) throw validationError([multipartFailureError(parsed.failure)]);
      const checked = await checkUpload(parsed.fields, parsed.files);
      if (!checked.ok) throw validationError(checked.errors);
      const result = await documents.upload(
        request.partnerId!,
        request.params.partner_client_id,
        checked.upload,
        requestOrigin(request),
      );
      if (!result.ok) throw new HttpError(result.error);
      return reply.code(201).send({ result: result.document });
    },
  );

  app.get<{
    Params: { partner_client_id: string };
    Querystring: Static<typeof ListQuery>;
  }>(
    "/v1/partner/clients/:partner_client_id/documents",
    {
      schema: {
        tags: ["documents"],
        operationId: "listDocuments",
        summary: "List a client's documents",
        description: "Newest first; `type` is repeatable. Download links are valid for 900 seconds.",
        params: ClientParams,
        querystring: ListQuery,
        response: {
          200: DocumentPageSchema,
          ...errorResponses(["invalid_client"]),
        },
      },
    },
    async (request) => {
      const q = request.query;
      const result = await documents.list(
        request.partnerId!,
        request.params.partner_client_id,
        { types: q.type ?? [], page: q.page ?? 1, pageSize: q.page_size ?? limits.pageSizeDefault },
        requestOrigin(request),
      );
      if (!result.ok) throw new HttpError(result.error);
      const { ok: _ok, ...body } = result;
      return body;
    },
  );

  app.get<{ Params: { partner_client_id: string; document_id: string } }>(
    "/v1/partner/clients/:partner_client_id/documents/:document_id",
    {
      schema: {
        tags: ["documents"],
        operationId: "getDocument",
        summary: "Get a client's document",
        description:
          "404 when the document does not exist or is not this client's. Download links are valid " +
          "for 900 seconds: fetch the document again for fresh ones, never store them.",
        params: DocumentParams,
        response: { 200: One, ...errorResponses(["invalid_client", "not_found"]) },
      },
    },
    async (request) => {
      // Any id that is not a positive integer names no document: 404, like an absent one.
      const raw = request.params.document_id;
      const id = /^[1-9][0-9]{0,15}$/.test(raw) && Number.isSafeInteger(Number(raw)) ? Number(raw) : null;
      const result = await documents.get(
        request.partnerId!,
        request.params.partner_client_id,
        id,
        requestOrigin(request),
      );
      if (!result.ok) throw new HttpError(result.error);
      return { result: result.document };
    },
  );
}

/** A body that could not be taken apart at all: one error at ["body"]. */
function multipartFailureError(failure: MultipartFailure): FieldError {
  switch (failure) {
    case "not_multipart":
      return {
        loc: ["body"],
        msg: "The body should be multipart/form-data with type, front_file and optionally back_file",
        type: "multipart_expected",
      };
    case "malformed":
      return { loc: ["body"], msg: "The multipart body could not be parsed", type: "multipart_invalid" };
    case "too_many_files":
      return {
        loc: ["body"],
        msg: `The multipart body should hold at most ${limits.multipartFilesMax} files`,
        type: "too_long",
      };
    case "too_many_fields":
      return {
        loc: ["body"],
        msg: `The multipart body should hold at most ${limits.multipartFieldsMax} fields`,
        type: "too_long",
      };
  }
}

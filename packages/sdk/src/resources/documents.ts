// A client's KYC documents (docs/reference.md §4.7). Uploads are multipart bodies the SDK writes itself, so that
// the bytes it signs are the bytes it sends (docs/reference.md §5.2: multipart bodies are hashed as sent).

import { type MultipartPart, multipartBody } from "../multipart.ts";
import { checkPageParams, paginate } from "../pagination.ts";
import type { RequestOptions, RequestSender } from "../request-sender.ts";
import { segment } from "../request-sender.ts";
import { pageOf, resultOf } from "../responses.ts";
import type {
  ClientDocument,
  DocumentFile,
  DocumentListParams,
  DocumentUploadRequest,
  Page,
  WithResponse,
} from "../types.ts";

const documentsPath = (partnerClientId: string) =>
  `/v1/partner/clients/${segment(partnerClientId, "partnerClientId")}/documents`;

function filePart(name: "front_file" | "back_file", file: DocumentFile): MultipartPart {
  if (!(file.data instanceof Uint8Array)) {
    throw new TypeError(`${name}: data must be the file's bytes (a Uint8Array or Buffer)`);
  }
  return {
    name,
    data: file.data,
    filename: file.filename ?? name,
    contentType: file.contentType ?? "application/octet-stream",
  };
}

export class Documents {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /**
   * POST /v1/partner/clients/{partner_client_id}/documents (multipart: type, front_file,
   * back_file). Not sent again after a timeout or a lost connection, which could store it twice.
   * Errors: 422 (type, format, over 5 MiB); 2008.
   */
  async upload(
    partnerClientId: string,
    request: DocumentUploadRequest,
    options: RequestOptions = {},
  ): Promise<WithResponse<ClientDocument>> {
    const parts: MultipartPart[] = [
      { name: "type", value: request.type },
      filePart("front_file", request.front),
    ];
    if (request.back !== undefined) parts.push(filePart("back_file", request.back));
    const response = await this.#sender.send(
      {
        method: "POST",
        path: documentsPath(partnerClientId),
        multipart: multipartBody(parts),
        signed: true,
        replaySafe: false,
      },
      options,
    );
    return resultOf<ClientDocument>(response);
  }

  /** GET …/documents/{document_id}: with fresh file links (valid 900 s). Errors: 404; 2008. */
  async get(
    partnerClientId: string,
    documentId: number,
    options: RequestOptions = {},
  ): Promise<WithResponse<ClientDocument>> {
    if (!Number.isSafeInteger(documentId) || documentId < 1) {
      throw new RangeError(
        `documentId must be a positive integer (the document's id), got ${String(documentId)}`,
      );
    }
    const response = await this.#sender.send(
      {
        method: "GET",
        path: `${documentsPath(partnerClientId)}/${documentId}`,
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return resultOf<ClientDocument>(response);
  }

  /** GET …/documents: one page, filtered by type. Errors: 422; 2008. */
  async list(
    partnerClientId: string,
    params: DocumentListParams = {},
    options: RequestOptions = {},
  ): Promise<WithResponse<Page<WithResponse<ClientDocument>>>> {
    checkPageParams(params);
    const response = await this.#sender.send(
      {
        method: "GET",
        path: documentsPath(partnerClientId),
        query: { type: params.type, page: params.page, page_size: params.page_size },
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return pageOf<ClientDocument>(response);
  }

  /** Every document of the client matching the filter, across all pages. */
  listAll(
    partnerClientId: string,
    params: DocumentListParams = {},
    options: RequestOptions = {},
  ): AsyncGenerator<WithResponse<ClientDocument>, void, undefined> {
    return paginate(params, (page, page_size) =>
      this.list(partnerClientId, { ...params, page, page_size }, options),
    );
  }
}

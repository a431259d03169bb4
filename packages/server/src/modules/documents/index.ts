export { DocumentSchema, type DocumentView } from "./document-views.ts";
export { documentsRoutes, requestOrigin } from "./documents-routes.ts";
export { DocumentsService } from "./documents-service.ts";
export { documentTypes } from "./documents-validation.ts";
export { fileRoutes } from "./file-routes.ts";
export { FileUrlSigner } from "./file-urls.ts";

export { systemResolver, type UrlPolicy } from "./url-safety.ts";
export { WebhookSigner } from "./webhook-signer.ts";
export type { AdminWebhookEndpointView, WebhookEnabledBody } from "./webhook-views.ts";
export { webhooksAdminRoutes, webhooksRoutes } from "./webhooks-routes.ts";
export { WebhooksService } from "./webhooks-service.ts";

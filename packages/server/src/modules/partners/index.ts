export {
  type AuthFailureCause,
  type AuthResult,
  PartnerAuthenticator,
  type SignedRequest,
} from "./partner-auth.ts";
export {
  type PartnerFailure,
  type PartnerResult,
  PartnersService,
  type PartnerView,
} from "./partners-service.ts";
export { purgeExpiredSignatures } from "./partners-store.ts";

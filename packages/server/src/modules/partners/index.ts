export {
  type AuthFailureCause,
  type AuthResult,
  CredentialCheck,
  normaliseIp,
  PartnerAuthenticator,
  parseRange,
  type SignedRequest,
} from "./partner-auth.ts";
export {
  AdminPartnerKeyListSchema,
  AdminPartnerKeySchema,
  AdminPartnerListSchema,
  AdminPartnerSchema,
  PartnerActiveBody,
  PartnerCreateBody,
  PartnerIpsBody,
  PartnerKeyAddBody,
  PartnerKeyBody,
  type PartnerKeyView,
  PartnerLimitsBody,
  type PartnerView,
} from "./partner-views.ts";
export {
  type PartnerFailure,
  type PartnerKeyResult,
  type PartnerKeysResult,
  type PartnerResult,
  PartnersService,
} from "./partners-service.ts";
export {
  partnerArgument,
  purgeExpiredSignatures,
  readCredentials,
  type SignatureToRecord,
  signatureArrays,
} from "./partners-store.ts";
export {
  defaultRateLimits,
  effectiveLimit,
  type RateClass,
  type RateDecision,
  RateLimiter,
  type RateLimitOverrides,
  rateClasses,
} from "./rate-limits.ts";
export { changeSigned, SignedWrite, WriteRefused } from "./signed-write.ts";

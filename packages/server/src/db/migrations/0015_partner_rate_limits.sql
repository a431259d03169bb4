-- Rate limits per partner (docs/decisions.md, "Rate limits"): the operator's own budget for each
-- class of signed request, in requests per minute; null means the service's default
-- (config/limits.ts). Read in the same statement as the partner's credentials, so a change takes
-- effect with the partner's next request in every process.
ALTER TABLE partners
  ADD COLUMN rate_limit_reads integer CHECK (rate_limit_reads > 0),
  ADD COLUMN rate_limit_writes integer CHECK (rate_limit_writes > 0),
  ADD COLUMN rate_limit_quotes integer CHECK (rate_limit_quotes > 0);

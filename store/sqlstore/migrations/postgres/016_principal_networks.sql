-- The network allowlist of a principal: canonical CIDR prefixes separated
-- by commas ("" = any address). Token issuance, bearer tokens, vended
-- storage credentials and SQL logins are refused from other addresses.
ALTER TABLE principals ADD COLUMN allowed_cidrs TEXT NOT NULL DEFAULT '';

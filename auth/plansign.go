package auth

import "context"

// scanPlanDomain prefixes every signed scan plan id. Like the audit
// checkpoint's domain it holds a '/' and a newline, which no JWT signing
// input (base64url text and a dot) contains, and it differs from the
// checkpoint's, so no plan id signature is a token's or a checkpoint's.
const scanPlanDomain = "floe-scan-plan/v1\n"

// SignScanPlan signs a scan plan id's payload (see restcat) with the
// current token-signing key, which every node sharing the store holds, and
// returns the key's id and the signature.
func (s *Service) SignScanPlan(ctx context.Context, msg []byte) (string, []byte, error) {
	return s.SignAuditCheckpoint(ctx, append([]byte(scanPlanDomain), msg...))
}

// VerifyScanPlan returns nil if sig is kid's signature of a scan plan id's
// payload made by SignScanPlan on any node.
func (s *Service) VerifyScanPlan(ctx context.Context, kid string, msg, sig []byte) error {
	return s.VerifyAuditCheckpoint(ctx, kid, append([]byte(scanPlanDomain), msg...), sig)
}

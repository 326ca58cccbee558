package restcat

// PlanCacheSize returns the number of plans the handler keeps and their
// size in bytes (benchmarks).
func PlanCacheSize(h *Handler) (int, int64) { return h.plans.results.Len() }

package auditexport

// ArrowBuffersKept returns the bytes of Arrow buffers e keeps for its next
// batch (for tests).
func ArrowBuffersKept(e *Exporter) int64 { return e.alloc.kept() }

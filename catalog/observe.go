package catalog

import "github.com/floe-lake/floe"

// Outcomes of a commit an Observer is told of.
const (
	// CommitSuccess: the commit was applied.
	CommitSuccess = "success"
	// CommitConflict: the commit was refused for a concurrent change or a
	// failed requirement (the client is told to reload and retry).
	CommitConflict = "conflict"
	// CommitRetry: the pointer swap lost a race and the commit is
	// re-applied on fresh metadata (one per retry, not an outcome).
	CommitRetry = "retry"
	// CommitError: the commit failed otherwise.
	CommitError = "error"
)

// Observer is told what the catalog does, for metrics. Implementations
// must be safe for concurrent use and fast (they run on every commit and
// metadata load).
type Observer interface {
	// Commit is told each commit's outcome (CommitSuccess, CommitConflict,
	// CommitError) and each retry (CommitRetry).
	Commit(result string)
	// MetadataCache is told of each lookup of parsed metadata: hit or not.
	MetadataCache(hit bool)
}

type noObserver struct{}

func (noObserver) Commit(string)      {}
func (noObserver) MetadataCache(bool) {}

// commitResult names the outcome of a commit that returned err.
func commitResult(err error) string {
	switch {
	case err == nil:
		return CommitSuccess
	case floe.KindOf(err) == floe.Conflict:
		return CommitConflict
	}
	return CommitError
}

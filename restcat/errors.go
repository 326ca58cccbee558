package restcat

import (
	"log/slog"
	"net/http"

	"github.com/floe-lake/floe/internal/httperr"
)

// ErrorModel is the Iceberg REST error body, sent as {"error": ErrorModel}.
type ErrorModel = httperr.ErrorModel

// writeError sends err as an Iceberg ErrorModel.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	httperr.Write(w, r, log, requestID(r.Context()), err)
}

func writeJSON(w http.ResponseWriter, status int, v any) { httperr.JSON(w, status, v) }

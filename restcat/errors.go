package restcat

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/floe-lake/floe"
)

// ErrorModel is the Iceberg REST error body, sent as {"error": ErrorModel}.
type ErrorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

type errorResponse struct {
	Error ErrorModel `json:"error"`
}

// statusAndType maps an error to the HTTP status and Iceberg exception type.
func statusAndType(err error) (int, string) {
	switch floe.KindOf(err) {
	case floe.Invalid:
		return http.StatusBadRequest, "BadRequestException"
	case floe.Unauthenticated:
		return http.StatusUnauthorized, "NotAuthorizedException"
	case floe.Forbidden:
		return http.StatusForbidden, "ForbiddenException"
	case floe.NotFound:
		switch floe.EntityOf(err) {
		case "namespace":
			return http.StatusNotFound, "NoSuchNamespaceException"
		case "table":
			return http.StatusNotFound, "NoSuchTableException"
		case "view":
			return http.StatusNotFound, "NoSuchViewException"
		case "warehouse":
			return http.StatusNotFound, "NoSuchWarehouseException"
		default:
			return http.StatusNotFound, "NotFoundException"
		}
	case floe.AlreadyExists:
		return http.StatusConflict, "AlreadyExistsException"
	case floe.NotEmpty:
		return http.StatusConflict, "NamespaceNotEmptyException"
	case floe.Conflict:
		return http.StatusConflict, "CommitFailedException"
	case floe.Indeterminate:
		return http.StatusInternalServerError, "CommitStateUnknownException"
	case floe.Unsupported:
		return http.StatusNotAcceptable, "UnsupportedOperationException"
	case floe.Unavailable:
		return http.StatusServiceUnavailable, "ServiceUnavailableException"
	case floe.Unprocessable:
		return http.StatusUnprocessableEntity, "UnprocessableEntityException"
	default:
		return http.StatusInternalServerError, "InternalServerError"
	}
}

// writeError sends err as an Iceberg ErrorModel. Internal errors are logged
// with the request id and reported to the client only as "internal error".
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, typ := statusAndType(err)
	msg := floe.PublicMessage(err)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		status, typ, msg = http.StatusBadRequest, "BadRequestException", "request body is larger than the limit"
	}
	if status >= 500 {
		rid := requestID(r.Context())
		log.ErrorContext(r.Context(), "request failed", "status", status, "err", err)
		if floe.KindOf(err) == floe.Internal {
			msg = "internal error (request id " + rid + ")"
		}
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
	}
	writeJSON(w, status, errorResponse{Error: ErrorModel{Message: msg, Type: typ, Code: status}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"internal error: cannot encode response","type":"InternalServerError","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

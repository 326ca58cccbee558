// Package httperr writes Floe's JSON HTTP error bodies: the Iceberg REST
// ErrorModel ({"error": {"message", "type", "code"}}), which the REST
// catalog and the management API share, with statuses mapped from
// floe.Error kinds at this one edge.
package httperr

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/netallow"
)

// ErrorModel is the Iceberg REST error body, sent as {"error": ErrorModel}.
type ErrorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// Response is the envelope of an ErrorModel.
type Response struct {
	Error ErrorModel `json:"error"`
}

// StatusAndType maps an error to the HTTP status and Iceberg exception type.
func StatusAndType(err error) (int, string) {
	switch floe.KindOf(err) {
	case floe.Invalid:
		if floe.EntityOf(err) == "metadata" { // catalog.EntityMetadata: what the reference raises as IllegalArgumentException
			return http.StatusBadRequest, "IllegalArgumentException"
		}
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
		case "function":
			return http.StatusNotFound, "NoSuchFunctionException"
		case "warehouse":
			return http.StatusNotFound, "NoSuchWarehouseException"
		case "plan-id":
			return http.StatusNotFound, "NoSuchPlanIdException"
		case "plan-task":
			return http.StatusNotFound, "NoSuchPlanTaskException"
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

// Write sends err as an ErrorModel. Internal errors are logged with the
// request id (rid) and reported to the client only as "internal error".
func Write(w http.ResponseWriter, r *http.Request, log *slog.Logger, rid string, err error) {
	status, typ := StatusAndType(err)
	msg := floe.PublicMessage(err)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		status, typ, msg = http.StatusBadRequest, "BadRequestException", "request body is larger than the limit"
	}
	if status >= 500 {
		log.ErrorContext(r.Context(), "request failed", "status", status, "err", err)
		if floe.KindOf(err) == floe.Internal {
			msg = "internal error (request id " + rid + ")"
		}
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
	}
	JSON(w, status, Response{Error: ErrorModel{Message: msg, Type: typ, Code: status}})
}

// JSON sends v as a JSON body with the given status.
func JSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"internal error: cannot encode response","type":"InternalServerError","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Bearer returns the token of an "Authorization: Bearer <token>" header.
func Bearer(r *http.Request) (string, bool) {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:]), true
	}
	return "", false
}

// ClientAddr is the client address as audit events record it: the one the
// listener resolved (X-Forwarded-For is believed only from a configured
// trusted proxy; see package netallow), else the host part of the peer
// address.
func ClientAddr(r *http.Request) string {
	if a, ok := netallow.ClientFrom(r.Context()); ok && a.IsValid() {
		return a.String()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

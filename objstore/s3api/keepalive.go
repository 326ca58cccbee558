package s3api

import (
	"context"
	"encoding/xml"
	"net/http"
	"time"
)

// Timing of the keep-alive of slow XML operations (see runSlow).
const (
	defaultKeepaliveAfter = 3 * time.Second
	defaultKeepaliveEvery = 10 * time.Second
)

// runSlow runs op, an operation that may take long (CompleteMultipartUpload
// re-streams every part into the final object; CopyObject copies it), and
// writes the XML document it returns, with the headers it returns when the
// response has not started yet. If op has not finished after
// keepaliveAfter, it does what S3 does: it sends the 200 status and the XML
// declaration at once and then a space every keepaliveEvery, so that client
// read timeouts do not fire, and finally the result document or, if op
// failed, an <Error> document (the AWS SDKs check the root element of these
// 200 responses). Errors op returns before the deadline get their usual
// status.
func (s *Server) runSlow(ctx context.Context, q *request, op func(ctx context.Context) (any, http.Header, error)) error {
	type result struct {
		v   any
		h   http.Header
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.ErrorContext(ctx, "s3api: panic", "panic", p, "request_id", q.id, "op", q.op)
				done <- result{err: errInternal(nil)}
			}
		}()
		v, h, err := op(ctx)
		done <- result{v, h, err}
	}()
	if s.keepaliveAfter > 0 { // 0 streams at once (tests)
		timer := time.NewTimer(s.keepaliveAfter)
		defer timer.Stop()
		select {
		case r := <-done:
			if r.err != nil {
				return r.err
			}
			for k, v := range r.h {
				q.w.Header()[k] = v
			}
			return writeXML(q, r.v)
		case <-timer.C:
		}
	}

	h := q.w.Header()
	h.Set("Content-Type", "application/xml")
	q.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(q.w)
	send := func(b []byte) {
		if q.streamErr != nil {
			return
		}
		if _, err := q.w.Write(b); err != nil {
			q.streamErr = err
			return
		}
		if err := rc.Flush(); err != nil {
			q.streamErr = err
		}
	}
	send([]byte(xml.Header))
	tick := time.NewTicker(s.keepaliveEvery)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			v := r.v
			var ae *apiError
			if r.err != nil {
				ae = toAPIError(r.err)
				if ae.Status >= 500 {
					s.log.ErrorContext(ctx, "s3api: request failed", "request_id", q.id, "op", q.op, "err", r.err)
				}
				v = errorBody{Code: ae.Code, Message: ae.Message, Resource: q.r.URL.Path, RequestID: q.id}
			}
			body, err := xml.Marshal(v)
			if err != nil {
				return errInternal(err) // too late for a status; recorded as a stream error
			}
			send(body)
			if ae != nil && q.streamErr == nil {
				q.streamErr = ae // the access log records the code; the status stays 200
			}
			return nil
		case <-tick.C:
			send([]byte(" "))
		}
	}
}

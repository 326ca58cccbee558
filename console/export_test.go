package console

import (
	"context"

	"github.com/floe-lake/floe/websession"
)

// SessionToken returns the Floe token of the session named by cookie (for
// tests that check what the browser never sees).
func SessionToken(h *Handler, cookie string) (string, bool) {
	s, ok, err := h.sessions.get(context.Background(), cookie)
	if err != nil || !ok {
		return "", false
	}
	return s.token, true
}

// SessionCount is how many sessions h holds in memory (-1 when they are
// in a shared store).
func SessionCount(h *Handler) int {
	if m, ok := h.sessions.store.(*websession.Memory); ok {
		return m.Len()
	}
	return -1
}

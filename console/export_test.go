package console

// SessionToken returns the Floe token of the session named by cookie (for
// tests that check what the browser never sees).
func SessionToken(h *Handler, cookie string) (string, bool) {
	s, ok := h.sessions.get(cookie)
	if !ok {
		return "", false
	}
	return s.token, true
}

// SessionCount is how many sessions h holds.
func SessionCount(h *Handler) int { return h.sessions.len() }

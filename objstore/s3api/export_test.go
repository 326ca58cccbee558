package s3api

import "time"

// SetKeepalive changes when and how often slow operations send keep-alive
// whitespace (tests force the streamed 200 response with after = 0).
func SetKeepalive(s *Server, after, every time.Duration) {
	s.keepaliveAfter, s.keepaliveEvery = after, every
}

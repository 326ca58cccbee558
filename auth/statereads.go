package auth

import (
	"context"
	"sync"
)

// stateReads coalesces the token-state reads Verify makes, without
// weakening what a read guarantees: every caller's answer comes from a
// store read that began after the caller asked. A caller joins a read of
// the same client id and token id only while that read has not yet begun;
// a caller that finds one already running waits for it to end and then
// starts the next, which every caller arriving in the meantime shares. So a
// revocation committed before a request is always seen by it, exactly as
// with one read per request, while the N concurrent requests of one token
// (an engine's worker threads) cost at most two reads in flight, not N.
//
// The map holds an entry per token with a read running or waiting, so it
// is bounded by the number of requests in flight.
type stateReads struct {
	read func(ctx context.Context, clientID, jti string) (TokenState, error)

	mu    sync.Mutex
	state map[stateKey]*stateSlot
}

type stateKey struct{ clientID, jti string }

// stateSlot is a token's read in progress and the one queued behind it.
type stateSlot struct {
	running, next *stateFlight
}

// stateFlight is one store read and its answer, shared by its callers.
type stateFlight struct {
	done chan struct{}
	ts   TokenState
	err  error
}

func newStateReads(read func(ctx context.Context, clientID, jti string) (TokenState, error)) *stateReads {
	return &stateReads{read: read, state: make(map[stateKey]*stateSlot)}
}

// get returns the token's state from a read that began after the call.
func (r *stateReads) get(ctx context.Context, clientID, jti string) (TokenState, error) {
	k := stateKey{clientID, jti}
	r.mu.Lock()
	slot := r.state[k]
	switch {
	case slot == nil:
		f := &stateFlight{done: make(chan struct{})}
		r.state[k] = &stateSlot{running: f}
		r.mu.Unlock()
		return r.lead(ctx, k, f)
	case slot.next != nil:
		// A read that has not begun: its answer is fresh enough.
		f := slot.next
		r.mu.Unlock()
		return wait(ctx, f)
	default:
		// A read is running and may have begun before this call: queue
		// the next one, start it when the running one ends.
		f := &stateFlight{done: make(chan struct{})}
		slot.next = f
		prev := slot.running
		r.mu.Unlock()
		<-prev.done
		r.mu.Lock()
		slot.running, slot.next = f, nil
		r.mu.Unlock()
		return r.lead(ctx, k, f)
	}
}

// lead runs flight f's read for its callers and publishes the answer. The
// read does not end with the leader's context: the callers sharing it have
// their own, and a point query is short.
func (r *stateReads) lead(ctx context.Context, k stateKey, f *stateFlight) (TokenState, error) {
	f.ts, f.err = r.read(context.WithoutCancel(ctx), k.clientID, k.jti)
	r.mu.Lock()
	if slot := r.state[k]; slot != nil && slot.running == f {
		slot.running = nil
		if slot.next == nil {
			delete(r.state, k)
		}
	}
	r.mu.Unlock()
	close(f.done)
	return f.ts, f.err
}

// wait returns flight f's answer, or the context's error if it ends first.
func wait(ctx context.Context, f *stateFlight) (TokenState, error) {
	select {
	case <-f.done:
		return f.ts, f.err
	case <-ctx.Done():
		return TokenState{}, ctx.Err()
	}
}

// inFlight is the number of tokens with a read running or queued.
func (r *stateReads) inFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.state)
}

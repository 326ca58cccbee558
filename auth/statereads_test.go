package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeStates is a token-state store whose reads answer with the state as
// it was when the read began, and can be held open.
type fakeStates struct {
	revoked atomic.Bool
	reads   atomic.Int32
	begun   chan struct{} // receives once per read, when it begins
	hold    chan struct{} // a read ends when this is closed or sent to
}

func newFakeStates() *fakeStates {
	return &fakeStates{begun: make(chan struct{}, 1024), hold: make(chan struct{})}
}

func (f *fakeStates) read(ctx context.Context, clientID, jti string) (TokenState, error) {
	if err := ctx.Err(); err != nil {
		return TokenState{}, err
	}
	f.reads.Add(1)
	ts := TokenState{Revoked: f.revoked.Load()}
	ts.Principal.ClientID = clientID
	f.begun <- struct{}{}
	<-f.hold
	return ts, nil
}

// TestStateReadsNeverStale is the guarantee: a revocation committed before
// a request asks is seen by it, even when a read of the same token that
// began before the revocation is still running.
func TestStateReadsNeverStale(t *testing.T) {
	f := newFakeStates()
	r := newStateReads(f.read)
	ctx := context.Background()

	first := make(chan TokenState, 1)
	go func() { ts, _ := r.get(ctx, "c", "j"); first <- ts }()
	<-f.begun // the first read began while the token was valid

	f.revoked.Store(true) // the revocation commits
	const n = 40
	var wg sync.WaitGroup
	later := make(chan TokenState, n)
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); ts, _ := r.get(ctx, "c", "j"); later <- ts }()
	}
	// Let the later callers queue behind the running read.
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		queued := r.state[stateKey{"c", "j"}] != nil && r.state[stateKey{"c", "j"}].next != nil
		r.mu.Unlock()
		if queued || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(f.hold)
	wg.Wait()
	close(later)

	if ts := <-first; ts.Revoked {
		t.Fatalf("the read that began before the revocation saw it: the fake is wrong")
	}
	got := 0
	for ts := range later {
		got++
		if !ts.Revoked {
			t.Fatalf("a request made after the revocation was answered with the state before it")
		}
	}
	if got != n {
		t.Fatalf("%d answers, want %d", got, n)
	}
	// The n later callers shared reads: far fewer than one each. (At most
	// one queued read is shared at a time; scheduling may split them.)
	if reads := f.reads.Load(); reads < 2 || reads > n/2 {
		t.Fatalf("%d store reads for 1+%d calls: want 2..%d", reads, n, n/2)
	}
	if r.inFlight() != 0 {
		t.Fatalf("%d tokens still tracked after every call ended", r.inFlight())
	}
}

// TestStateReadsKeysApart checks that tokens never share a read.
func TestStateReadsKeysApart(t *testing.T) {
	f := newFakeStates()
	close(f.hold)
	r := newStateReads(f.read)
	for _, tc := range []struct{ client, jti string }{{"a", "1"}, {"a", "2"}, {"b", "1"}} {
		ts, err := r.get(context.Background(), tc.client, tc.jti)
		if err != nil || ts.Principal.ClientID != tc.client {
			t.Fatalf("get(%s,%s) = %+v, %v", tc.client, tc.jti, ts.Principal, err)
		}
	}
	if f.reads.Load() != 3 {
		t.Fatalf("%d reads for three tokens, want 3", f.reads.Load())
	}
}

// TestStateReadsContexts checks that a caller whose context ends stops
// waiting, and that the leader's cancellation does not fail the read that
// others share.
func TestStateReadsContexts(t *testing.T) {
	f := newFakeStates()
	r := newStateReads(f.read)

	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() { _, err := r.get(leaderCtx, "c", "j"); leader <- err }()
	<-f.begun
	cancelLeader()

	// A caller queued behind the running read gives up with its context.
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelWait()
	queued := make(chan error, 1)
	go func() { _, err := r.get(context.Background(), "c", "j"); queued <- err }()
	for {
		r.mu.Lock()
		s := r.state[stateKey{"c", "j"}]
		ready := s != nil && s.next != nil
		r.mu.Unlock()
		if ready {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := r.get(waitCtx, "c", "j"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a caller whose context ended got %v, want DeadlineExceeded", err)
	}
	f.hold <- struct{}{} // end the leader's read
	if err := <-leader; err != nil {
		t.Fatalf("the leader's read failed with its cancelled context: %v", err)
	}
	<-f.begun
	f.hold <- struct{}{} // end the queued read
	if err := <-queued; err != nil {
		t.Fatalf("queued caller: %v", err)
	}
	if r.inFlight() != 0 {
		t.Fatalf("%d tokens still tracked", r.inFlight())
	}
}

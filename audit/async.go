package audit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// AsyncOptions configures an Async writer. Zero values mean defaults.
type AsyncOptions struct {
	// Capacity is how many events may wait (default 16384). When the queue
	// is full, Record blocks: events are never dropped.
	Capacity int
	// MaxBatch is the most events stored in one transaction (default 1024).
	MaxBatch int
	// Linger is how long the writer waits for more events after the first
	// of a batch (default 10ms; negative: not at all). Under load it turns
	// many small transactions into a few large ones, which share the
	// fixed cost of a transaction (its commit writes every page it
	// touched); an event reaches the store at most this much later.
	Linger time.Duration
	// Logger receives a line for every failed batch.
	Logger *slog.Logger
	// Observe, if set, is told after each stored batch how long its oldest
	// event waited since it happened (its Time) to be stored (metrics).
	Observe func(lag time.Duration)
}

// defaultLinger is AsyncOptions.Linger's default.
const defaultLinger = 10 * time.Millisecond

// Async appends events in the background, in batches, for hot paths (every
// object request, every credential vend) that must not wait for a store
// transaction each. Events keep their order; a batch that fails is retried
// until it is stored or the writer is closed.
type Async struct {
	log     *Log
	ch      chan Event
	max     int
	linger  time.Duration
	logger  *slog.Logger
	observe func(lag time.Duration)
	done    chan struct{}
	closed  atomic.Bool
	closeMu sync.RWMutex
	// stored counts events written (for tests and metrics).
	stored atomic.Int64
}

// NewAsync starts a background writer over l.
func NewAsync(l *Log, o AsyncOptions) *Async {
	if o.Capacity <= 0 {
		o.Capacity = 16384
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Linger == 0 {
		o.Linger = defaultLinger
	}
	a := &Async{log: l, ch: make(chan Event, o.Capacity), max: o.MaxBatch, linger: o.Linger, logger: o.Logger, observe: o.Observe, done: make(chan struct{})}
	go a.run()
	return a
}

// Record queues e. It blocks while the queue is full (backpressure) unless
// ctx ends first; after Close it appends synchronously.
func (a *Async) Record(ctx context.Context, e Event) {
	if e.Time.IsZero() {
		e.Time = a.log.now()
	}
	a.closeMu.RLock()
	if a.closed.Load() {
		a.closeMu.RUnlock()
		if _, err := a.log.Append(context.WithoutCancel(ctx), e); err != nil {
			a.logger.Error("audit: append after close failed", "action", e.Action, "err", err)
		}
		return
	}
	select {
	case a.ch <- e:
	case <-ctx.Done():
		// The request is gone, but its event must still be kept.
		a.ch <- e
	}
	a.closeMu.RUnlock()
}

// Stored returns how many events the writer has stored.
func (a *Async) Stored() int64 { return a.stored.Load() }

func (a *Async) run() {
	defer close(a.done)
	batch := make([]Event, 0, a.max)
	var timer *time.Timer
	for e := range a.ch {
		batch = append(batch[:0], e)
		// Linger unless a full batch is waiting already. The writer
		// sleeps instead of waking for every event that arrives.
		if a.linger > 0 && len(a.ch) < a.max-1 {
			if timer == nil {
				timer = time.NewTimer(a.linger)
			} else {
				timer.Reset(a.linger)
			}
			<-timer.C
		}
	fill:
		for len(batch) < a.max {
			select {
			case e, ok := <-a.ch:
				if !ok {
					break fill
				}
				batch = append(batch, e)
			default:
				break fill
			}
		}
		a.flush(batch)
	}
}

func (a *Async) flush(batch []Event) {
	for attempt := 0; ; attempt++ {
		err := a.log.AppendBatch(context.Background(), batch)
		if err == nil {
			a.stored.Add(int64(len(batch)))
			if a.observe != nil {
				a.observe(time.Since(batch[0].Time))
			}
			return
		}
		a.logger.Error("audit: storing a batch failed; retrying", "events", len(batch), "attempt", attempt+1, "err", err)
		time.Sleep(min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second))
		if attempt >= 50 {
			a.logger.Error("audit: giving up on a batch", "events", len(batch))
			return
		}
	}
}

// Close stores every queued event and stops the writer. Events recorded
// afterwards are appended synchronously.
func (a *Async) Close(ctx context.Context) error {
	a.closeMu.Lock()
	if a.closed.Swap(true) {
		a.closeMu.Unlock()
		return nil
	}
	close(a.ch)
	a.closeMu.Unlock()
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake/ingest"
)

// TestStreamer: micro-batches are buffered and committed by rows, by
// time, on wait and on close; a bad request is refused whole; a full
// buffer refuses more.
func TestStreamer(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if _, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("s"), Schema: must(ingest.ParseSchema("id long not null, msg string"))}, strings.NewReader("id,msg\n0,zero\n")); err != nil {
		t.Fatal(err)
	}
	st := e.svc.NewStreamer(ingest.StreamOptions{FlushInterval: time.Hour, FlushRows: 5, MaxBufferedRows: 8})
	req := ingest.StreamRequest{Warehouse: wh, Table: ident("s")}
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "{\"id\":%d,\"msg\":\"m%d\"}\n", i, i)
		}
		return b.String()
	}
	count := func() int { return len(rowsOf(t, e.load(t, "s"))) }
	res, err := st.Append(ctx, req, strings.NewReader(lines(1, 3)))
	if err != nil || res.Accepted != 2 || res.Committed || res.Buffered != 2 {
		t.Fatalf("append: %+v %v", res, err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d rows visible before a flush", n)
	}
	// A bad row refuses the whole request.
	if _, err := st.Append(ctx, req, strings.NewReader(lines(3, 4)+`{"id":"x"}`+"\n")); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("bad row: %v", err)
	}
	if _, err := st.Append(ctx, req, strings.NewReader(`{"msg":"no id"}`+"\n")); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("missing required column: %v", err)
	}
	// Reaching FlushRows commits in the background.
	if _, err := st.Append(ctx, req, strings.NewReader(lines(3, 6))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count() != 6 {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows after reaching FlushRows, want 6", count())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A full buffer refuses more.
	if _, err := st.Append(ctx, req, strings.NewReader(lines(100, 104))); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, req, strings.NewReader(lines(104, 109))); floe.KindOf(err) != floe.Unavailable {
		t.Fatalf("over MaxBufferedRows: %v", err)
	}
	// Wait commits at once, with what was buffered before.
	waited, err := st.Append(ctx, ingest.StreamRequest{Warehouse: wh, Table: ident("s"), Wait: true}, strings.NewReader(lines(6, 7)))
	if err != nil || !waited.Committed || waited.SnapshotID != e.load(t, "s").CurrentSnapshot().SnapshotID {
		t.Fatalf("wait: %+v %v", waited, err)
	}
	if n := count(); n != 11 {
		t.Fatalf("%d rows after a waited append, want 11", n)
	}
	// Concurrent appends all land; Close flushes the rest.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			if _, err := st.Append(context.Background(), req, strings.NewReader(lines(1000+w, 1001+w))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 15 {
		t.Fatalf("%d rows after Close, want 15", n)
	}
	if _, err := st.Append(ctx, req, strings.NewReader(lines(2000, 2001))); floe.KindOf(err) != floe.Unavailable {
		t.Fatalf("append after Close: %v", err)
	}
}

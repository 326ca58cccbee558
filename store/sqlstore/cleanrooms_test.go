package sqlstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/cleanroom"
)

// TestCleanRooms: create (duplicate, the server's limit), compare-and-swap
// updates (stale, unknown), concurrent updates of one version (exactly one
// wins), list, the query log and its bound, drop with its log, on every
// backend.
func TestCleanRooms(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			s := openForTest(t, be.dsn(t), Options{})
			at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
			collab := func(name string, v int, desc string) cleanroom.Collaboration {
				return cleanroom.Collaboration{Name: name, Description: desc, Creator: "retailer", CreatedAt: at, Version: v,
					Members: []cleanroom.Member{{Principal: "retailer", AddedBy: "retailer", AddedAt: at}}}
			}
			const max = 2
			for _, tc := range []struct {
				name string
				c    cleanroom.Collaboration
				want floe.Kind
			}{
				{"new", collab("overlap", 1, "v1"), -1},
				{"new again", collab("overlap", 1, "again"), floe.AlreadyExists},
				{"skips a version", collab("overlap", 3, "v3"), floe.Conflict},
				{"next", collab("overlap", 2, "v2"), -1},
				{"stale", collab("overlap", 2, "v2 again"), floe.Conflict},
				{"unknown", collab("ghost", 2, "x"), floe.NotFound},
				{"second", collab("reach", 1, "r1"), -1},
				{"over the limit", collab("third", 1, "x"), floe.Unprocessable},
			} {
				err := s.PutCollaboration(ctx, tc.c, max)
				if tc.want == -1 && err != nil || tc.want != -1 && floe.KindOf(err) != tc.want {
					t.Fatalf("%s: err %v, want kind %v", tc.name, err, tc.want)
				}
			}
			got, err := s.Collaboration(ctx, "overlap")
			if err != nil || got.Version != 2 || got.Description != "v2" || !got.CreatedAt.Equal(at) || got.Members[0].Principal != "retailer" {
				t.Fatalf("get: %+v %v", got, err)
			}
			if _, err := s.Collaboration(ctx, "ghost"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("get unknown: %v", err)
			}
			ls, err := s.Collaborations(ctx)
			if err != nil || len(ls) != 2 || ls[0].Name != "overlap" || ls[1].Name != "reach" {
				t.Fatalf("list: %+v %v", ls, err)
			}

			// Concurrent updates of version 2: exactly one wins.
			var wg sync.WaitGroup
			errs := make([]error, 6)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.PutCollaboration(ctx, collab("overlap", 3, fmt.Sprint("racer ", i)), max)
				}()
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case floe.KindOf(err) != floe.Conflict:
					t.Fatalf("racer: %v", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d racers won, want 1", won)
			}

			// The query log keeps the newest entries, newest first.
			const keep = 3
			for i := range 5 {
				r := cleanroom.QueryRecord{ID: fmt.Sprintf("q%d", i), Collaboration: "overlap", At: at.Add(time.Duration(i) * time.Second),
					Member: "advertiser", SQL: "SELECT count(*) FROM customers", Outcome: cleanroom.OutcomeSuccess, Rows: int64(i), Suppressed: 1}
				if err := s.AddCleanRoomQuery(ctx, r, keep); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.AddCleanRoomQuery(ctx, cleanroom.QueryRecord{ID: "other", Collaboration: "reach", At: at}, keep); err != nil {
				t.Fatal(err)
			}
			qs, err := s.CleanRoomQueries(ctx, "overlap", 100)
			if err != nil || len(qs) != keep || qs[0].ID != "q4" || qs[2].ID != "q2" || qs[0].Rows != 4 || qs[0].Member != "advertiser" {
				t.Fatalf("log: %+v %v", qs, err)
			}
			if qs, _ := s.CleanRoomQueries(ctx, "overlap", 1); len(qs) != 1 {
				t.Fatalf("log limit 1: %d entries", len(qs))
			}

			if err := s.DropCollaboration(ctx, "overlap"); err != nil {
				t.Fatal(err)
			}
			if err := s.DropCollaboration(ctx, "overlap"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("drop twice: %v", err)
			}
			if qs, _ := s.CleanRoomQueries(ctx, "overlap", 100); len(qs) != 0 {
				t.Fatalf("the log outlived its collaboration: %d entries", len(qs))
			}
			if qs, _ := s.CleanRoomQueries(ctx, "reach", 100); len(qs) != 1 {
				t.Fatalf("another collaboration's log: %d entries", len(qs))
			}
			// A slot freed by the drop is usable again.
			if err := s.PutCollaboration(ctx, collab("third", 1, "x"), max); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCleanRoomTemplates: templates are created (duplicate, the
// per-collaboration limit), replaced by compare-and-swap (stale, unknown),
// listed by name, dropped, and dropped with their collaboration, on every
// backend.
func TestCleanRoomTemplates(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			s := openForTest(t, be.dsn(t), Options{})
			at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
			if err := s.PutCollaboration(ctx, cleanroom.Collaboration{Name: "overlap", Creator: "retailer", CreatedAt: at, Version: 1}, 10); err != nil {
				t.Fatal(err)
			}
			tmpl := func(name string, v int, sql string) cleanroom.Template {
				return cleanroom.Template{Collaboration: "overlap", Name: name, SQL: sql, Version: v, CreatedBy: "retailer", CreatedAt: at,
					Params: []cleanroom.TemplateParam{{Name: "segment", Type: cleanroom.ParamVarchar}}, AllowedMembers: []string{"advertiser"},
					Approvals: []cleanroom.Approval{{Member: "retailer", At: at}}}
			}
			const max = 2
			for _, tc := range []struct {
				name string
				t    cleanroom.Template
				want floe.Kind
			}{
				{"new", tmpl("by_segment", 1, "v1"), -1},
				{"new again", tmpl("by_segment", 1, "again"), floe.AlreadyExists},
				{"next", tmpl("by_segment", 2, "v2"), -1},
				{"stale", tmpl("by_segment", 2, "v2 again"), floe.Conflict},
				{"unknown", tmpl("ghost", 2, "x"), floe.NotFound},
				{"second", tmpl("all", 1, "a1"), -1},
				{"over the limit", tmpl("third", 1, "x"), floe.Unprocessable},
			} {
				err := s.PutTemplate(ctx, tc.t, max)
				if tc.want == -1 && err != nil || tc.want != -1 && floe.KindOf(err) != tc.want {
					t.Fatalf("%s: err %v, want kind %v", tc.name, err, tc.want)
				}
			}
			got, err := s.Template(ctx, "overlap", "by_segment")
			if err != nil || got.Version != 2 || got.SQL != "v2" || got.Params[0].Type != cleanroom.ParamVarchar || !got.Approved("retailer") || !got.CreatedAt.Equal(at) {
				t.Fatalf("get: %+v %v", got, err)
			}
			if _, err := s.Template(ctx, "other", "by_segment"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("another collaboration's: %v", err)
			}
			ls, err := s.Templates(ctx, "overlap")
			if err != nil || len(ls) != 2 || ls[0].Name != "all" || ls[1].Name != "by_segment" {
				t.Fatalf("list: %+v %v", ls, err)
			}
			if err := s.DropTemplate(ctx, "overlap", "all"); err != nil {
				t.Fatal(err)
			}
			if err := s.DropTemplate(ctx, "overlap", "all"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("drop twice: %v", err)
			}
			if err := s.DropCollaboration(ctx, "overlap"); err != nil {
				t.Fatal(err)
			}
			if ls, err := s.Templates(ctx, "overlap"); err != nil || len(ls) != 0 {
				t.Fatalf("after the collaboration's drop: %+v %v", ls, err)
			}
		})
	}
}

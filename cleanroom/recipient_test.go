package cleanroom_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/cleanroom"
)

// TestRecipientMembers: a recipient (another organisation's identity) is
// added as "recipient:<name>" only by its owner (Options.Recipient decides;
// here the retailer owns "agency"), is pinned by its id, enters the room
// (Room) as a member, and brings no table: configuring one is refused even
// though the policy would let a principal of that name read it. Without
// Options.Recipient no recipient can be a member.
func TestRecipientMembers(t *testing.T) {
	ctx := t.Context()
	now := func() time.Time { return time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC) }
	owned := map[string]string{"agency": "retailer"}
	s := newServiceWith(t, 10, nil, now, func(o *cleanroom.Options) {
		o.Recipient = func(_ context.Context, by authz.Subject, name string) (authz.Subject, error) {
			owner, ok := owned[name]
			if !ok {
				return authz.Subject{}, floe.E(floe.NotFound, "recipient", "no recipient %q", name)
			}
			if owner != by.Principal && !by.Admin {
				return authz.Subject{}, floe.E(floe.Forbidden, "recipient", "not the owner")
			}
			return authz.Subject{Principal: cleanroom.RecipientPrefix + name, PrincipalID: "rid-" + name}, nil
		}
	})
	retailer, advertiser := subject("retailer"), subject("advertiser")
	if _, err := s.Create(ctx, retailer, cleanroom.CreateRequest{Name: "overlap"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, advertiser, cleanroom.CreateRequest{Name: "theirs"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMember(ctx, advertiser, "theirs", "recipient:agency", false); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("a recipient added by a principal that does not own it: %v, want Invalid", err)
	}
	if _, err := s.AddMember(ctx, retailer, "overlap", "recipient:ghost", false); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("an unknown recipient: %v, want Invalid", err)
	}
	c, err := s.AddMember(ctx, retailer, "overlap", "recipient:agency", false)
	if err != nil || len(c.Members) != 2 || c.Members[1].Principal != "recipient:agency" || c.Members[1].PrincipalID != "rid-agency" {
		t.Fatalf("add the recipient: %+v %v", c, err)
	}
	agency := authz.Subject{Principal: "recipient:agency", PrincipalID: "rid-agency"}
	if _, err := s.Room(ctx, agency, "overlap"); err != nil {
		t.Fatalf("the recipient enters: %v", err)
	}
	if _, err := s.Room(ctx, authz.Subject{Principal: "recipient:agency", PrincipalID: "rid-other"}, "overlap"); floe.KindOf(err) != floe.Forbidden {
		t.Fatalf("a recipient re-created under the same name enters: %v", err)
	}
	if _, err := s.Room(ctx, agency, "theirs"); floe.KindOf(err) != floe.Forbidden {
		t.Fatalf("the recipient enters a collaboration it is not a member of: %v", err)
	}
	tbl := customers()
	if _, err := s.ConfigureTable(ctx, agency, "overlap", tbl); floe.KindOf(err) != floe.Forbidden || !strings.Contains(err.Error(), "brings no tables") {
		t.Fatalf("a recipient configures a table: %v, want Forbidden (brings no tables)", err)
	}

	plain := newService(t, 10)
	if _, err := plain.Create(ctx, retailer, cleanroom.CreateRequest{Name: "overlap"}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.AddMember(ctx, retailer, "overlap", "recipient:agency", false); floe.KindOf(err) != floe.Unsupported {
		t.Fatalf("a recipient without Options.Recipient: %v, want Unsupported", err)
	}
}

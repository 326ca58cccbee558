package sharing_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/sharing"
)

func TestRecipientEvent(t *testing.T) {
	r := sharing.Recipient{ID: "r-1", Name: "acme", TokenID: "rt_1"}
	for _, c := range []struct {
		name string
		in   sharing.RequestEvent
		want audit.Event
	}{
		{"list shares", sharing.RequestEvent{RequestID: "q1", ClientAddr: "10.0.0.1", Action: sharing.ActionRequest, Operation: "listShares"},
			audit.Event{RequestID: "q1", Principal: "recipient:acme", ClientAddr: "10.0.0.1", Action: "sharing.request", Resource: "recipient:acme",
				Outcome: audit.OutcomeSuccess, Detail: map[string]any{"recipient_id": "r-1", "recipient": "acme", "token_id": "rt_1", "operation": "listShares"}}},
		{"query a table", sharing.RequestEvent{Action: sharing.ActionURL, Operation: "query", Share: "s1", Schema: "pub", Table: "accts",
			Object: "crm.accounts", Detail: map[string]any{"files": 3}},
			audit.Event{Principal: "recipient:acme", Action: "sharing.url.issue", Resource: "share:s1/pub.accts", Outcome: audit.OutcomeSuccess,
				Detail: map[string]any{"recipient_id": "r-1", "recipient": "acme", "token_id": "rt_1", "operation": "query", "share": "s1",
					"schema": "pub", "table": "accts", "object": "crm.accounts", "files": 3}}},
		{"denied schema listing", sharing.RequestEvent{Action: sharing.ActionRequest, Share: "s1", Schema: "pub", Outcome: audit.OutcomeDenied},
			audit.Event{Principal: "recipient:acme", Action: "sharing.request", Resource: "share:s1/pub", Outcome: audit.OutcomeDenied,
				Detail: map[string]any{"recipient_id": "r-1", "recipient": "acme", "token_id": "rt_1", "share": "s1", "schema": "pub"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sharing.RecipientEvent(r, c.in); !reflect.DeepEqual(got, c.want) {
				t.Errorf("RecipientEvent =\n%+v, want\n%+v", got, c.want)
			}
		})
	}
	// The service hands the event to its audit sink.
	var got []audit.Event
	svc := sharing.New(sharing.Options{Audit: func(_ context.Context, e audit.Event) { got = append(got, e) }})
	svc.RecordRequest(t.Context(), r, sharing.RequestEvent{Action: sharing.ActionRead, Share: "s1"})
	if len(got) != 1 || got[0].Action != "sharing.read" || got[0].Resource != "share:s1" || got[0].Detail["token_id"] != "rt_1" {
		t.Errorf("recorded %+v", got)
	}
	// A refused token has no recipient: no principal.
	if e := sharing.RecipientEvent(sharing.Recipient{}, sharing.RequestEvent{Action: sharing.ActionAuth, Outcome: audit.OutcomeUnauthenticated}); e.Principal != "" {
		t.Errorf("principal of an unknown recipient %q", e.Principal)
	}
}

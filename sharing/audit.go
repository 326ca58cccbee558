package sharing

import (
	"github.com/floe-lake/floe/audit"
)

// Audit actions of recipients' requests, written by the protocol servers
// with RecipientEvent (docs/sharing.md lists them).
const (
	// ActionRequest is one request of a recipient (list shares, schemas,
	// tables, metadata, a query); Detail "operation" names it.
	ActionRequest = "sharing.request"
	// ActionURL is the issuance of pre-signed URLs (Detail "files": how many).
	ActionURL = "sharing.url.issue"
	// ActionVend is a storage credential vended to a recipient.
	ActionVend = "sharing.credential.vend"
	// ActionRead is a read of an object's data through Floe itself.
	ActionRead = "sharing.read"
	// ActionAuth is a refused authentication of a recipient token.
	ActionAuth = "sharing.auth"
)

// RequestEvent describes one recipient request for RecipientEvent.
type RequestEvent struct {
	RequestID  string
	ClientAddr string
	// Action is one of the Action constants.
	Action string
	// Operation names the protocol operation, e.g. "listShares", "query".
	Operation string
	// Share, Schema and Table are the names the recipient used (empty when
	// the request had none).
	Share, Schema, Table string
	// Object is the real table ("ns.name") behind Table, when resolved.
	Object string
	// Outcome is an audit outcome (audit.OutcomeSuccess, ...).
	Outcome string
	// Detail adds fields (never a token or URL signature).
	Detail map[string]any
}

// RecipientEvent returns the audit event of a recipient's request. Its
// principal is CredentialPrincipal(r.Name), so that
// `floe audit query --principal recipient:NAME` answers what a recipient
// did; the detail carries recipient_id, recipient, token_id, share, schema,
// table and object.
func RecipientEvent(r Recipient, e RequestEvent) audit.Event {
	d := make(map[string]any, len(e.Detail)+8)
	for k, v := range e.Detail {
		d[k] = v
	}
	d["recipient_id"], d["recipient"], d["token_id"] = r.ID, r.Name, r.TokenID
	for k, v := range map[string]string{"operation": e.Operation, "share": e.Share, "schema": e.Schema, "table": e.Table, "object": e.Object} {
		if v != "" {
			d[k] = v
		}
	}
	res := "share:" + e.Share
	switch {
	case e.Share == "":
		res = "recipient:" + r.Name
	case e.Table != "":
		res += "/" + e.Schema + "." + e.Table
	case e.Schema != "":
		res += "/" + e.Schema
	}
	out := e.Outcome
	if out == "" {
		out = audit.OutcomeSuccess
	}
	principal := ""
	if r.Name != "" {
		principal = CredentialPrincipal(r.Name)
	}
	return audit.Event{RequestID: e.RequestID, Principal: principal, ClientAddr: e.ClientAddr, Action: e.Action,
		Resource: res, Outcome: out, Detail: d}
}

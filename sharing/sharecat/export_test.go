package sharecat

import (
	"time"

	"github.com/floe-lake/floe/sharing"
)

// FakeResolver exports the in-memory resolver to the end-to-end tests.
type FakeResolver = fakeResolver

// NewFakeResolver returns an empty fake resolver.
func NewFakeResolver() *FakeResolver { return newFakeResolver() }

// AddRecipient adds a recipient with a token granted shares.
func (f *fakeResolver) AddRecipient(name, token string, expiry time.Time, shares ...string) sharing.Recipient {
	return f.recipient(name, token, expiry, shares...)
}

// AddTable shares a table.
func (f *fakeResolver) AddTable(t sharing.Table) { f.add(t) }

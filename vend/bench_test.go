package vend_test

import (
	"testing"

	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/vend"
)

func BenchmarkMint(b *testing.B) {
	e := newEmbedded(b, &memKeys{}, fakeclock.New(t0), 0)
	s := session()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := e.Mint(b.Context(), s, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	e := newEmbedded(b, &memKeys{}, fakeclock.New(t0), 0)
	c, _ := mint(b, e, session(), 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := e.Resolve(b.Context(), c.AccessKeyID, c.SessionToken); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolveParallel(b *testing.B) {
	e := newEmbedded(b, &memKeys{}, fakeclock.New(t0), 0)
	c, _ := mint(b, e, session(), 0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := e.Resolve(b.Context(), c.AccessKeyID, c.SessionToken); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkSessionPolicy(b *testing.B) {
	grants := session().Grants
	b.ReportAllocs()
	for b.Loop() {
		if _, err := vend.SessionPolicy(grants); err != nil {
			b.Fatal(err)
		}
	}
}

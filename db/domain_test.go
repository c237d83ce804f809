package db_test

import (
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func TestDomainFreshness(t *testing.T) {
	s := dbtest.NewStore(t)
	for _, d := range []model.Domain{{Name: "forever", TTL: 0}, {Name: "fresh", TTL: 3600}, {Name: "stale", TTL: 3600}} {
		if err := s.UpsertDomain(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, s, `UPDATE domains SET expires_at = now() - interval '1 second' WHERE name = 'stale'`)
	got, err := s.FreshDomains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"forever", "fresh"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fresh domains = %v, want %v", got, want)
	}
	// Bumping an expired domain makes it fresh again.
	if err := s.UpsertDomain(ctx, model.Domain{Name: "stale", TTL: 60}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FreshDomains(ctx); len(got) != 3 {
		t.Fatalf("fresh domains = %v, want 3", got)
	}
}

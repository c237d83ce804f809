package scrape_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/internal/scrape"
)

func TestSamples(t *testing.T) {
	got, err := scrape.Samples(strings.NewReader(`# HELP a_total A.
# TYPE a_total counter
a_total{code="200",route="/v1/ping"} 3
b 1.5e+06

c_bucket{le="+Inf"} 2
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{`a_total{code="200",route="/v1/ping"}`: 3, "b": 1.5e6, `c_bucket{le="+Inf"}`: 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Samples = %v, want %v", got, want)
	}
	if names := scrape.Names(got); !reflect.DeepEqual(names, map[string]bool{"a_total": true, "b": true, "c_bucket": true}) {
		t.Fatalf("Names = %v", names)
	}
	if _, err := scrape.Samples(strings.NewReader("a x\n")); err == nil {
		t.Fatal("a sample without a number parsed")
	}
}

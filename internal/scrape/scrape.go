// Package scrape reads Prometheus's text exposition as the tests need it: each sample by its
// series, so that a test states what a /metrics page must serve in the form an operator reads.
package scrape

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Samples reads an exposition: each sample's value by its series as written, `name` or
// `name{label="value",...}` (labels in the order the exposition gives them).
func Samples(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("sample %q: no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// URL reads the exposition served at url.
func URL(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Samples(resp.Body)
}

// Names are the metric names of samples' series.
func Names(samples map[string]float64) map[string]bool {
	out := map[string]bool{}
	for s := range samples {
		name, _, _ := strings.Cut(s, "{")
		out[name] = true
	}
	return out
}

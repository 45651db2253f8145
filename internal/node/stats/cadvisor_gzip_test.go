package stats

import (
	"compress/gzip"
	"io"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	cases := []struct {
		header []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"identity"}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"deflate, gzip;q=1.0, *;q=0.5"}, true}, // Prometheus's
		{[]string{"zstd", "gzip"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"gzip;q=0.1"}, true},
		{[]string{"*"}, true},
		{[]string{"br, deflate"}, false},
		{[]string{"gzipx"}, false},
	}
	for _, c := range cases {
		if got := acceptsGzip(c.header); got != c.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", c.header, got, c.want)
		}
	}
}

// TestCadvisorGzip: a client that accepts gzip gets the same body
// compressed, with Content-Encoding gzip; one that does not gets it plain.
func TestCadvisorGzip(t *testing.T) {
	f := newCadvisorFixture(t)
	plain, _ := f.scrape(t)

	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics/cadvisor", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	f.p.CadvisorHandler().ServeHTTP(rec, req)
	if got := rec.Header().Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", got)
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// The same fake clock, the same files: the same body, but for the
	// root filesystem's usage (the real temporary directory's, which
	// others write to meanwhile).
	if got, want := withoutFsUsage(string(body)), withoutFsUsage(plain); got != want {
		t.Errorf("gzipped body differs from the plain one:\n%s\n---\n%s", got, want)
	}

	rec = httptest.NewRecorder()
	f.p.CadvisorHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/cadvisor", nil))
	if got := rec.Header().Get("Content-Encoding"); got != "" {
		t.Errorf("without Accept-Encoding: Content-Encoding %q, want none", got)
	}
}

// TestParseDecimal agrees with strconv.ParseUint on what cgroup files hold
// (out of range: both fail).
func TestParseDecimal(t *testing.T) {
	for _, s := range []string{"0", "7", "1234567890", "9223372036854771712", strconv.FormatUint(math.MaxUint64, 10),
		"18446744073709551616", "", "-1", "max", "12a", " 1", "+1", "1_000"} {
		want, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			want = 0
		}
		got, ok := parseDecimal([]byte(s))
		if ok != (err == nil) || got != want {
			t.Errorf("parseDecimal(%q) = %d, %v; strconv says %d, %v", s, got, ok, want, err)
		}
	}
}

func withoutFsUsage(body string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(body, "\n") {
		if !strings.HasPrefix(l, "container_fs_") {
			b.WriteString(l)
		}
	}
	return b.String()
}

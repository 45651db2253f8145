package logs

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// naiveTailOffset is tailOffset's definition, computed forwards.
func naiveTailOffset(data []byte, n int64) int64 {
	if n < 0 {
		return 0
	}
	var ends []int64
	lastValidPartial := false
	var lastValidEnd int64
	off := int64(0)
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		end := off + int64(i) + 1
		if rec, err := parseRecord(data[off:end]); err == nil {
			lastValidPartial, lastValidEnd = rec.partial, end
			if !rec.partial {
				ends = append(ends, end)
			}
		}
		off = end
	}
	if lastValidPartial {
		ends = append(ends, lastValidEnd)
	}
	if n >= int64(len(ends)) {
		return 0
	}
	return ends[int64(len(ends))-1-n]
}

func TestTailOffset(t *testing.T) {
	long := strings.Repeat("x", 300) // longer than a header
	tests := []struct {
		name    string
		content string
		n       int64
		want    string // what follows the offset
	}{
		{name: "negative means everything", content: crilog("0 stdout F a", "1 stdout F b"), n: -1, want: crilog("0 stdout F a", "1 stdout F b")},
		{name: "last line", content: crilog("0 stdout F a", "1 stdout F b"), n: 1, want: crilog("1 stdout F b")},
		{name: "zero lines", content: crilog("0 stdout F a", "1 stdout F b"), n: 0, want: ""},
		{name: "more than there are", content: crilog("0 stdout F a"), n: 5, want: crilog("0 stdout F a")},
		{name: "partials make one line", content: crilog("0 stdout F a", "1 stdout P b", "2 stdout P c", "3 stdout F d"), n: 1, want: crilog("1 stdout P b", "2 stdout P c", "3 stdout F d")},
		{name: "line being written counts", content: crilog("0 stdout F a", "1 stdout P b"), n: 1, want: crilog("1 stdout P b")},
		{name: "line being written and one more", content: crilog("0 stdout F a", "1 stdout F b", "2 stdout P c"), n: 2, want: crilog("1 stdout F b", "2 stdout P c")},
		{name: "malformed lines do not count", content: crilog("0 stdout F a") + "junk\n" + crilog("1 stdout F b") + "junk\n", n: 1, want: "junk\n" + crilog("1 stdout F b") + "junk\n"},
		{name: "unterminated last line does not count", content: crilog("0 stdout F a", "1 stdout F b") + "2026-03-01T10:00:02Z stdout F c", n: 1, want: crilog("1 stdout F b") + "2026-03-01T10:00:02Z stdout F c"},
		{name: "long lines", content: crilog("0 stdout F "+long, "1 stdout F "+long, "2 stdout F "+long), n: 2, want: crilog("1 stdout F "+long, "2 stdout F "+long)},
		{name: "only junk", content: "junk\nmore junk\n", n: 1, want: "junk\nmore junk\n"},
		{name: "empty", content: "", n: 3, want: ""},
	}
	for _, tc := range tests {
		for _, bs := range []int{1, 3, 17, 64, 4096} {
			t.Run(fmt.Sprintf("%s/block %d", tc.name, bs), func(t *testing.T) {
				r := strings.NewReader(tc.content)
				off, err := tailOffsetBlocks(r, int64(len(tc.content)), tc.n, bs)
				if err != nil {
					t.Fatal(err)
				}
				if got := tc.content[off:]; got != tc.want {
					t.Errorf("tail %d starts at %d: %q, want %q", tc.n, off, got, tc.want)
				}
			})
		}
	}
}

// TestTailOffsetMatchesDefinition compares tailOffset with the forward
// definition on random logs, block sizes and line counts.
func TestTailOffsetMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	kinds := []string{"stdout F", "stdout P", "stderr F", "stderr P"}
	for iter := 0; iter < 300; iter++ {
		var b strings.Builder
		lines := rng.Intn(30)
		for i := 0; i < lines; i++ {
			if rng.Intn(10) == 0 {
				b.WriteString("junk line\n")
				continue
			}
			b.WriteString(crilog(fmt.Sprintf("%d %s %s", i, kinds[rng.Intn(len(kinds))], strings.Repeat("y", rng.Intn(400)))))
		}
		if rng.Intn(4) == 0 {
			b.WriteString("2026-03-01T10:00:00Z stdout F unterminated")
		}
		data := b.String()
		n := int64(rng.Intn(lines+2)) - 1
		bs := 1 + rng.Intn(700)
		got, err := tailOffsetBlocks(strings.NewReader(data), int64(len(data)), n, bs)
		if err != nil {
			t.Fatal(err)
		}
		if want := naiveTailOffset([]byte(data), n); got != want {
			t.Fatalf("iteration %d (n=%d, block %d): offset %d, want %d\n%s", iter, n, bs, got, want, data)
		}
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r     io.ReaderAt
	bytes atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.bytes.Add(int64(n))
	return n, err
}

func TestTailLargeFileReadsOnlyItsEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	line := crilog("0 stdout F " + strings.Repeat("z", 200))
	chunk := strings.Repeat(line, 1000)
	for i := 0; i < 200; i++ { // about 45 MB
		if _, err := f.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString(crilog("1 stdout F second last", "2 stdout P last ", "3 stdout F line")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	c := &countingReaderAt{r: f}
	off, err := tailOffset(c, fi.Size(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := fi.Size() - int64(len(crilog("1 stdout F second last", "2 stdout P last ", "3 stdout F line"))); off != want {
		t.Errorf("offset %d, want %d", off, want)
	}
	if read := c.bytes.Load(); read > tailBlockSize {
		t.Errorf("read %d bytes of a %d-byte file to find 2 lines", read, fi.Size())
	}

	// Through ReadLogs, a tail of a few hundred lines.
	var out bytes.Buffer
	if err := ReadLogs(t.Context(), path, "", Options{TailLines: ptr[int64](300)}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != 300 || got[298] != "second last" || got[299] != "last line" {
		t.Errorf("tail 300: %d lines ending %q", len(got), got[len(got)-2:])
	}
}

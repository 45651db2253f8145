package volume

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readThrough(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func TestWriteAtomicUpdates(t *testing.T) {
	cases := []struct {
		name       string
		first      map[string]FileProjection
		second     map[string]FileProjection
		wantGone   []string
		wantSameTS bool
	}{
		{
			name:     "key removed and value changed",
			first:    map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("2"), Mode: 0o644}},
			second:   map[string]FileProjection{"a": {Data: []byte("9"), Mode: 0o644}},
			wantGone: []string{"b"},
		},
		{
			name:     "nested path replaced",
			first:    map[string]FileProjection{"d/x": {Data: []byte("x"), Mode: 0o644}},
			second:   map[string]FileProjection{"e/y": {Data: []byte("y"), Mode: 0o600}},
			wantGone: []string{"d", "d/x"},
		},
		{
			name:       "unchanged payload is a no-op",
			first:      map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}},
			second:     map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}},
			wantSameTS: true,
		},
		{
			name:   "mode change republishes",
			first:  map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}},
			second: map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o400}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteAtomic(dir, tc.first); err != nil {
				t.Fatal(err)
			}
			ts1, err := os.Readlink(filepath.Join(dir, dataDirName))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(ts1, "..") {
				t.Fatalf("data dir %q is not hidden", ts1)
			}
			if err := WriteAtomic(dir, tc.second); err != nil {
				t.Fatal(err)
			}
			ts2, _ := os.Readlink(filepath.Join(dir, dataDirName))
			if (ts1 == ts2) != tc.wantSameTS {
				t.Fatalf("..data %q -> %q, wantSame=%v", ts1, ts2, tc.wantSameTS)
			}
			if !tc.wantSameTS {
				if _, err := os.Stat(filepath.Join(dir, ts1)); !os.IsNotExist(err) {
					t.Fatalf("old data dir %s still present: %v", ts1, err)
				}
			}
			for p, fp := range tc.second {
				if got := readThrough(t, dir, p); got != string(fp.Data) {
					t.Errorf("%s = %q, want %q", p, got, fp.Data)
				}
				info, err := os.Stat(filepath.Join(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				if info.Mode().Perm() != os.FileMode(fp.Mode) {
					t.Errorf("%s mode %v, want %o", p, info.Mode().Perm(), fp.Mode)
				}
				top := strings.Split(p, "/")[0]
				if link, err := os.Readlink(filepath.Join(dir, top)); err != nil || link != filepath.Join(dataDirName, top) {
					t.Errorf("%s is not a ..data symlink: %q %v", top, link, err)
				}
			}
			for _, p := range tc.wantGone {
				if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
					t.Errorf("%s still visible: %v", p, err)
				}
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() == newDataDirName {
					t.Errorf("temporary link left behind")
				}
			}
		})
	}
}

func TestWriteAtomicRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "../x", "a/../../x", "..data"} {
		t.Run(p, func(t *testing.T) {
			err := WriteAtomic(t.TempDir(), map[string]FileProjection{p: {Data: []byte("x"), Mode: 0o644}})
			if err == nil {
				t.Fatalf("path %q accepted", p)
			}
		})
	}
}

func TestWriteAtomicReadersSeeWholeVersions(t *testing.T) {
	cases := []struct {
		name    string
		updates int
	}{
		{name: "many consecutive updates", updates: 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			version := func(i int) map[string]FileProjection {
				v := []byte(strings.Repeat(string(rune('a'+i%26)), 4096))
				return map[string]FileProjection{"f": {Data: v, Mode: 0o644}, "sub/g": {Data: v, Mode: 0o644}}
			}
			if err := WriteAtomic(dir, version(0)); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			bad := make(chan string, 1)
			go func() {
				defer close(bad)
				for {
					select {
					case <-done:
						return
					default:
					}
					b, err := os.ReadFile(filepath.Join(dir, "f"))
					if err != nil {
						continue // the symlink chain may be mid-swap; never partial
					}
					if len(b) != 4096 || strings.Count(string(b), string(b[:1])) != 4096 {
						bad <- "partial content"
						return
					}
				}
			}()
			for i := 1; i <= tc.updates; i++ {
				if err := WriteAtomic(dir, version(i)); err != nil {
					t.Fatal(err)
				}
			}
			close(done)
			if msg, ok := <-bad; ok {
				t.Fatal(msg)
			}
			entries, _ := os.ReadDir(dir)
			dataDirs := 0
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "..2") {
					dataDirs++
				}
			}
			if dataDirs != 1 {
				t.Fatalf("%d timestamped dirs left, want 1", dataDirs)
			}
		})
	}
}

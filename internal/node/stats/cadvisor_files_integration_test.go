//go:build integration

package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kept cgroup file is rendered afresh by every read, and one whose cgroup
// was removed fails (ENODEV) and is opened again by path, where a new
// cgroup of the same name now is: on the real cgroup filesystem.
func TestKeptCgroupFileOnRealCgroups(t *testing.T) {
	dir, limitFile := "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir, limitFile = "/sys/fs/cgroup", "memory.max"
	}
	cg := filepath.Join(dir, fmt.Sprintf("seed-kept-file-test-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatalf("make a memory cgroup (needs root): %v", err)
	}
	t.Cleanup(func() { os.Remove(cg) })
	setLimit := func(v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(cg, limitFile), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := newFileCache()
	t.Cleanup(files.closeAll)
	read := func() string {
		t.Helper()
		if !files.acquire() {
			t.Fatal("cache busy")
		}
		defer files.release()
		data, ok := newReader(files).cgroupStat(cg, limitFile)
		if !ok {
			t.Fatalf("read %s/%s failed", cg, limitFile)
		}
		return strings.TrimSpace(string(data))
	}
	setLimit("67108864")
	if got := read(); got != "67108864" {
		t.Fatalf("limit %s, want 67108864", got)
	}
	setLimit("33554432")
	if got := read(); got != "33554432" {
		t.Errorf("limit after the change %s, want 33554432 (read afresh from the kept file)", got)
	}
	if len(files.files) != 1 {
		t.Fatalf("%d kept files, want 1", len(files.files))
	}
	if err := os.Remove(cg); err != nil {
		t.Fatalf("remove the cgroup with its file kept open: %v", err)
	}
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := read(); got == "33554432" {
		t.Errorf("read the removed cgroup's limit %s from the new cgroup of the same name", got)
	}
	setLimit("16777216")
	if got := read(); got != "16777216" {
		t.Errorf("limit of the new cgroup %s, want 16777216", got)
	}
}

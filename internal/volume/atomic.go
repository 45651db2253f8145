package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	tsLayout       = "..2006_01_02_15_04_05."
)

// FileProjection is one file of a payload: its bytes and permission bits.
type FileProjection struct {
	Data []byte
	Mode int32
}

// validatePayloadPath rejects paths that could land outside the target dir or
// collide with the writer's own bookkeeping entries.
func validatePayloadPath(p string) error {
	if p == "" {
		return errors.New("invalid path: must not be empty")
	}
	if filepath.IsAbs(p) {
		return fmt.Errorf("invalid path %q: must be relative", p)
	}
	if strings.HasPrefix(p, "..") {
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
	}
	return nil
}

// topLevel returns the set of first path components of the payload's paths.
func topLevel(payload map[string]FileProjection) map[string]bool {
	out := make(map[string]bool, len(payload))
	for p := range payload {
		first := strings.SplitN(filepath.ToSlash(filepath.Clean(p)), "/", 2)[0]
		out[first] = true
	}
	return out
}

// WriteAtomic publishes payload into dir: files go to a fresh timestamped
// directory, ..data is swapped to it with a rename, a symlink per top-level
// entry points through ..data, and stale entries and the old data dir are
// removed afterwards. An unchanged payload is a no-op.
func WriteAtomic(dir string, payload map[string]FileProjection) error {
	for p := range payload {
		if err := validatePayloadPath(p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create volume dir %s: %w", dir, err)
	}
	dataLink := filepath.Join(dir, dataDirName)
	oldTS, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", dataLink, err)
	}
	if oldTS != "" {
		same, err := payloadMatches(filepath.Join(dir, oldTS), payload)
		if err != nil {
			return err
		}
		if same && visibleLinksMatch(dir, payload) {
			return nil
		}
	}

	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format(tsLayout))
	if err != nil {
		return fmt.Errorf("create data dir in %s: %w", dir, err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return fmt.Errorf("chmod %s: %w", tsDir, err)
	}
	if err := writePayload(tsDir, payload); err != nil {
		_ = os.RemoveAll(tsDir)
		return err
	}

	tmpLink := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return fmt.Errorf("create %s: %w", tmpLink, err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return fmt.Errorf("swap %s: %w", dataLink, err)
	}

	want := topLevel(payload)
	for name := range want {
		link := filepath.Join(dir, name)
		target := filepath.Join(dataDirName, name)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		if err := os.RemoveAll(link); err != nil {
			return fmt.Errorf("replace %s: %w", link, err)
		}
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("link %s: %w", link, err)
		}
	}
	if err := removeStale(dir, want); err != nil {
		return err
	}
	if oldTS != "" && oldTS != filepath.Base(tsDir) {
		if err := os.RemoveAll(filepath.Join(dir, oldTS)); err != nil {
			return fmt.Errorf("remove old data dir: %w", err)
		}
	}
	klog.V(4).InfoS("Published volume payload", "dir", dir, "dataDir", filepath.Base(tsDir), "files", len(payload))
	return nil
}

func writePayload(root string, payload map[string]FileProjection) error {
	paths := make([]string, 0, len(payload))
	for p := range payload {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fp := payload[p]
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create dir for %s: %w", p, err)
		}
		mode := fs.FileMode(fp.Mode).Perm()
		if err := os.WriteFile(full, fp.Data, mode); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	return nil
}

// payloadMatches reports whether dataDir holds exactly payload (bytes and modes).
func payloadMatches(dataDir string, payload map[string]FileProjection) (bool, error) {
	count := 0
	err := filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dataDir, p)
		if err != nil {
			return err
		}
		fp, ok := payload[rel]
		if !ok {
			return errMismatch
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != fs.FileMode(fp.Mode).Perm() {
			return errMismatch
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, fp.Data) {
			return errMismatch
		}
		count++
		return nil
	})
	switch {
	case errors.Is(err, errMismatch), errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("compare %s: %w", dataDir, err)
	}
	return count == len(payload), nil
}

var errMismatch = errors.New("payload mismatch")

func visibleLinksMatch(dir string, payload map[string]FileProjection) bool {
	for name := range topLevel(payload) {
		if cur, err := os.Readlink(filepath.Join(dir, name)); err != nil || cur != filepath.Join(dataDirName, name) {
			return false
		}
	}
	return true
}

// removeStale deletes user-visible entries that are no longer in the payload.
func removeStale(dir string, want map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || want[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove stale %s: %w", e.Name(), err)
		}
	}
	return nil
}

package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNormalizeName(t *testing.T) {
	cases := []struct{ in, want string }{
		{"busybox", "docker.io/library/busybox:latest"},
		{"busybox:1.36", "docker.io/library/busybox:1.36"},
		{"library/busybox:1.36", "docker.io/library/busybox:1.36"},
		{"someone/tool", "docker.io/someone/tool:latest"},
		{"docker.io/library/busybox:1.36", "docker.io/library/busybox:1.36"},
		{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"},
		{"localhost:5000/busybox", "localhost:5000/busybox:latest"},
		{"localhost:5000/busybox:1.36", "localhost:5000/busybox:1.36"},
		{"localhost/a/b:v1", "localhost/a/b:v1"},
	}
	for _, c := range cases {
		got, err := normalizeName(c.in)
		if err != nil || got != c.want {
			t.Errorf("normalizeName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if tag, want := tagOf(got), c.want[strings.LastIndex(c.want, ":")+1:]; tag != want {
			t.Errorf("tagOf(%q) = %q, want %q", got, tag, want)
		}
	}
	for _, bad := range []string{"", "busybox@sha256:abc", "a b", "/x", "x/"} {
		if got, err := normalizeName(bad); err == nil {
			t.Errorf("normalizeName(%q) = %q, want an error", bad, got)
		}
	}
}

// makeRootfs creates a small tree with a file, an executable, a symlink and
// a sticky directory.
func makeRootfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "usr/bin"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	must(os.Mkdir(filepath.Join(dir, "tmp"), 0o755))
	must(os.Chmod(filepath.Join(dir, "tmp"), os.ModeSticky|0o777))
	must(os.WriteFile(filepath.Join(dir, "usr/bin/tool"), []byte("#!/bin/true\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte("root:x:0:0::/:/bin/sh\n"), 0o644))
	must(os.Symlink("/usr/bin/tool", filepath.Join(dir, "bin/sh")))
	return dir
}

// readArchive returns the archive's files by name.
func readArchive(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = b
	}
}

func blobOf(t *testing.T, files map[string][]byte, digest string) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		t.Fatalf("blob %s missing from archive", digest)
	}
	sum := sha256.Sum256(b)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		t.Fatalf("blob %s has digest %s", digest, got)
	}
	return b
}

func TestWriteProducesOCILayoutAndDockerArchive(t *testing.T) {
	rootfs := makeRootfs(t)
	spec := Spec{
		Names:      []string{"busybox:1.36", "docker.io/library/busybox:latest"},
		Entrypoint: []string{"/bin/sh", "-c"},
		Cmd:        []string{"echo hi"},
		Env:        []string{"FOO=bar"},
		WorkingDir: "/tmp",
		User:       "65534",
		Created:    time.Unix(0, 0).UTC(),
	}
	var out bytes.Buffer
	digest, err := Write(&out, rootfs, spec)
	if err != nil {
		t.Fatal(err)
	}
	files := readArchive(t, out.Bytes())

	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"docker.io/library/busybox:1.36", "docker.io/library/busybox:latest"}
	if len(idx.Manifests) != 2 {
		t.Fatalf("index has %d manifests, want 2", len(idx.Manifests))
	}
	for i, d := range idx.Manifests {
		if d.Digest != digest || d.MediaType != mediaTypeManifest {
			t.Errorf("index[%d] = %+v, want manifest %s", i, d, digest)
		}
		if d.Annotations[annotationContainerdName] != wantNames[i] {
			t.Errorf("index[%d] name = %q, want %q", i, d.Annotations[annotationContainerdName], wantNames[i])
		}
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != runtime.GOARCH {
			t.Errorf("index[%d] platform = %+v", i, d.Platform)
		}
	}

	var mf manifest
	if err := json.Unmarshal(blobOf(t, files, digest), &mf); err != nil {
		t.Fatal(err)
	}
	var cfg imageConfig
	if err := json.Unmarshal(blobOf(t, files, mf.Config.Digest), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(mf.Layers) != 1 || !reflect.DeepEqual(cfg.RootFS.DiffIDs, []string{mf.Layers[0].Digest}) {
		t.Fatalf("layers %+v do not match diff_ids %v", mf.Layers, cfg.RootFS.DiffIDs)
	}
	wantRC := runtimeConfig{
		User: "65534", Env: []string{defaultPath, "FOO=bar"},
		Entrypoint: []string{"/bin/sh", "-c"}, Cmd: []string{"echo hi"}, WorkingDir: "/tmp",
	}
	if !reflect.DeepEqual(cfg.Config, wantRC) || cfg.OS != "linux" {
		t.Errorf("config = %+v, want %+v", cfg.Config, wantRC)
	}

	// The layer holds the tree, owned by root, with modes and link targets.
	layer := tar.NewReader(bytes.NewReader(blobOf(t, files, mf.Layers[0].Digest)))
	got := map[string]string{}
	for {
		hdr, err := layer.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(spec.Created) {
			t.Errorf("%s: uid %d gid %d mtime %v", hdr.Name, hdr.Uid, hdr.Gid, hdr.ModTime)
		}
		got[hdr.Name] = hdr.FileInfo().Mode().String() + " " + hdr.Linkname
	}
	want := map[string]string{
		"bin/":         "drwxr-xr-x ",
		"bin/sh":       "Lrwxrwxrwx /usr/bin/tool",
		"etc/":         "drwxr-xr-x ",
		"etc/passwd":   "-rw-r--r-- ",
		"tmp/":         "dtrwxrwxrwx ",
		"usr/":         "drwxr-xr-x ",
		"usr/bin/":     "drwxr-xr-x ",
		"usr/bin/tool": "-rwxr-xr-x ",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer entries:\n got %v\nwant %v", got, want)
	}

	// docker-archive view (what crane push reads) points at the same blobs.
	var dm []dockerManifest
	if err := json.Unmarshal(files["manifest.json"], &dm); err != nil {
		t.Fatal(err)
	}
	if len(dm) != 1 || !reflect.DeepEqual(dm[0].RepoTags, wantNames) ||
		dm[0].Config != "blobs/sha256/"+strings.TrimPrefix(mf.Config.Digest, "sha256:") ||
		len(dm[0].Layers) != 1 || files[dm[0].Layers[0]] == nil {
		t.Errorf("manifest.json = %+v", dm)
	}

	// Same input, same bytes.
	var again bytes.Buffer
	if _, err := Write(&again, rootfs, spec); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), again.Bytes()) {
		t.Error("two writes of the same rootfs differ")
	}
}

func TestWriteRejectsSpecialFiles(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.Symlink("x", filepath.Join(rootfs, "ok")); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(rootfs, "fifo")
	if err := syscall.Mkfifo(sock, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Write(io.Discard, rootfs, Spec{Names: []string{"x"}})
	if err == nil || !strings.Contains(err.Error(), "unsupported file type") {
		t.Fatalf("Write with a fifo: err = %v, want unsupported file type", err)
	}
}

func TestParseArgs(t *testing.T) {
	o, err := parseArgs([]string{"-rootfs", "/r", "-o", "/o.tar", "-name", "pause:3.10", "-name", "x",
		"-entrypoint", `["/pause"]`, "-cmd", `["a","b c"]`, "-env", "A=1", "-workdir", "/w", "-user", "65535"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Names: []string{"pause:3.10", "x"}, Entrypoint: []string{"/pause"}, Cmd: []string{"a", "b c"},
		Env: []string{"A=1"}, WorkingDir: "/w", User: "65535", Created: time.Unix(0, 0).UTC()}
	if o.rootfs != "/r" || o.out != "/o.tar" || !reflect.DeepEqual(o.spec, want) {
		t.Errorf("parseArgs = %+v", o)
	}
	for _, bad := range [][]string{
		{"-o", "x", "-name", "y"},
		{"-rootfs", "r", "-o", "x", "-name", "y", "-cmd", "sh"},
		{"-rootfs", "r", "-o", "x", "-name", "y", "-env", "NOEQUALS"},
		{"-rootfs", "r", "-o", "x", "-name", "y", "extra"},
	} {
		if _, err := parseArgs(bad, io.Discard); err == nil {
			t.Errorf("parseArgs(%q) succeeded, want an error", bad)
		}
	}
}

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "img.tar")
	o := options{rootfs: makeRootfs(t), out: out, spec: Spec{Names: []string{"x"}}}
	if _, err := writeFile(o); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "img.tar" {
		t.Errorf("dir holds %v, want only img.tar", entries)
	}
	o.rootfs = filepath.Join(dir, "missing")
	if _, err := writeFile(o); err == nil {
		t.Fatal("writeFile from a missing rootfs succeeded")
	}
	entries, _ = os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("failed write left %v", entries)
	}
}

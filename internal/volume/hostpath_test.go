package volume

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

func TestCheckHostPath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "dir")
	file := filepath.Join(root, "file")
	sock := filepath.Join(root, "sock")
	blk := filepath.Join(root, "blk")
	missing := filepath.Join(root, "missing")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if err := unix.Mknod(blk, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))); err != nil {
		t.Fatalf("mknod (needs root): %v", err)
	}
	cases := []struct {
		name    string
		path    string
		typ     v1.HostPathType
		wantErr string
		check   func(t *testing.T)
	}{
		{name: "unset on missing path", path: missing, typ: v1.HostPathUnset},
		{name: "directory exists", path: dir, typ: v1.HostPathDirectory},
		{name: "directory missing", path: missing, typ: v1.HostPathDirectory, wantErr: "hostPath type check failed: " + missing + " is not a directory"},
		{name: "directory is file", path: file, typ: v1.HostPathDirectory, wantErr: "is not a directory"},
		{name: "directory or create", path: filepath.Join(root, "new", "d"), typ: v1.HostPathDirectoryOrCreate, check: func(t *testing.T) {
			info, err := os.Stat(filepath.Join(root, "new", "d"))
			if err != nil || !info.IsDir() || info.Mode().Perm() != 0o755 {
				t.Fatalf("created dir: %v %v", info, err)
			}
		}},
		{name: "directory or create on file", path: file, typ: v1.HostPathDirectoryOrCreate, wantErr: "is not a directory"},
		{name: "file exists", path: file, typ: v1.HostPathFile},
		{name: "file is dir", path: dir, typ: v1.HostPathFile, wantErr: "is not a file"},
		{name: "file missing", path: missing, typ: v1.HostPathFile, wantErr: "is not a file"},
		{name: "file or create", path: filepath.Join(root, "nf", "f"), typ: v1.HostPathFileOrCreate, check: func(t *testing.T) {
			info, err := os.Stat(filepath.Join(root, "nf", "f"))
			if err != nil || !info.Mode().IsRegular() {
				t.Fatalf("created file: %v %v", info, err)
			}
		}},
		{name: "file or create on dir", path: dir, typ: v1.HostPathFileOrCreate, wantErr: "is not a file"},
		{name: "socket", path: sock, typ: v1.HostPathSocket},
		{name: "socket is file", path: file, typ: v1.HostPathSocket, wantErr: "is not a socket file"},
		{name: "char device", path: "/dev/null", typ: v1.HostPathCharDev},
		{name: "char device is file", path: file, typ: v1.HostPathCharDev, wantErr: "is not a character device"},
		{name: "block device", path: blk, typ: v1.HostPathBlockDev},
		{name: "block device is char", path: "/dev/null", typ: v1.HostPathBlockDev, wantErr: "is not a block device"},
		{name: "unknown type", path: file, typ: "Weird", wantErr: "unknown type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckHostPath(tc.path, tc.typ)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

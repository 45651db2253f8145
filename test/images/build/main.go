package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const usage = `usage: build -rootfs DIR -o OUT.tar -name REF [-name REF...]
             [-entrypoint JSON] [-cmd JSON] [-env K=V...] [-workdir DIR] [-user U]

Writes a one-layer image of DIR; import it with
  ctr -n k8s.io images import OUT.tar
or push it with
  crane push OUT.tar localhost:5000/NAME:TAG
-entrypoint and -cmd take JSON arrays, e.g. -cmd '["sh"]'.
The manifest digest is printed on stdout.
`

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	rootfs string
	out    string
	spec   Spec
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	var (
		o                   options
		names, env          listFlag
		entrypoint, cmdJSON string
	)
	fset := flag.NewFlagSet("build", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, usage) }
	fset.StringVar(&o.rootfs, "rootfs", "", "directory holding the image's root filesystem")
	fset.StringVar(&o.out, "o", "", "output tarball")
	fset.Var(&names, "name", "image reference (repeatable)")
	fset.StringVar(&entrypoint, "entrypoint", "", "entrypoint as a JSON array")
	fset.StringVar(&cmdJSON, "cmd", "", "cmd as a JSON array")
	fset.Var(&env, "env", "KEY=VALUE (repeatable)")
	fset.StringVar(&o.spec.WorkingDir, "workdir", "", "working directory")
	fset.StringVar(&o.spec.User, "user", "", "user[:group]")
	if err := fset.Parse(args); err != nil {
		return o, err
	}
	if fset.NArg() != 0 {
		return o, fmt.Errorf("unexpected arguments %q", fset.Args())
	}
	if o.rootfs == "" || o.out == "" || len(names) == 0 {
		return o, fmt.Errorf("-rootfs, -o and -name are required")
	}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return o, fmt.Errorf("-env %q: want KEY=VALUE", kv)
		}
	}
	o.spec.Names, o.spec.Env = names, env
	var err error
	if o.spec.Entrypoint, err = jsonList("entrypoint", entrypoint); err != nil {
		return o, err
	}
	if o.spec.Cmd, err = jsonList("cmd", cmdJSON); err != nil {
		return o, err
	}
	o.spec.Created = time.Unix(0, 0).UTC()
	return o, nil
}

func jsonList(flagName, v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var l []string
	if err := json.Unmarshal([]byte(v), &l); err != nil {
		return nil, fmt.Errorf("-%s %q: want a JSON array of strings: %w", flagName, v, err)
	}
	return l, nil
}

// writeFile writes the image next to out and renames it into place, so a
// half-written tarball is never left under the final name.
func writeFile(o options) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(o.out), ".image-*.tar")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	digest, err := Write(tmp, o.rootfs, o.spec)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	return digest, os.Rename(tmp.Name(), o.out)
}

func main() {
	o, err := parseArgs(os.Args[1:], os.Stderr)
	if err == flag.ErrHelp {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n\n%s", err, usage)
		os.Exit(2)
	}
	digest, err := writeFile(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

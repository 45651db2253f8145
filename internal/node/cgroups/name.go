package cgroups

import (
	"fmt"
	"path"
	"strings"
)

// Driver is KubeletConfiguration.cgroupDriver: how cgroup names are spelled.
type Driver string

// The cgroup drivers upstream knows.
const (
	DriverCgroupfs Driver = "cgroupfs"
	DriverSystemd  Driver = "systemd"
)

// Name is a cgroup as its components from the root of the hierarchy, e.g.
// {"kubepods", "burstable", "pod<uid>"}. The root is the empty Name.
type Name []string

// Child returns n extended by parts; n itself is never modified.
func (n Name) Child(parts ...string) Name {
	out := make(Name, 0, len(n)+len(parts))
	return append(append(out, n...), parts...)
}

// ParseCgroupfs turns a cgroupfs path ("/a/b", "a/b/", "/") into a Name.
func ParseCgroupfs(p string) Name {
	var out Name
	for _, part := range strings.Split(path.Clean("/"+p), "/") {
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Cgroupfs is n as a cgroupfs path: "/a/b", or "/" for the root.
func (n Name) Cgroupfs() string { return "/" + strings.Join(n, "/") }

// Systemd is n as systemd spells it: every component becomes a slice nested
// in its parent's, dashes inside a component escaped to underscores, e.g.
// {"kubepods","burstable","pod1-2"} is
// "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice".
func (n Name) Systemd() string {
	if len(n) == 0 {
		return "/"
	}
	var b strings.Builder
	prefix := ""
	for _, part := range n {
		unit := strings.ReplaceAll(part, "-", "_")
		if prefix != "" {
			unit = prefix + "-" + unit
		}
		prefix = unit
		b.WriteString("/" + unit + ".slice")
	}
	return b.String()
}

// ParseSystemd is the inverse of Systemd: it takes the path (or only the
// last slice, "kubepods-burstable-pod1_2.slice") and returns its Name.
func ParseSystemd(p string) (Name, error) {
	base := path.Base(path.Clean("/" + p))
	if base == "/" {
		return Name{}, nil
	}
	unit, ok := strings.CutSuffix(base, ".slice")
	if !ok || unit == "" {
		return nil, fmt.Errorf("%q is not a systemd slice", p)
	}
	var out Name
	for _, part := range strings.Split(unit, "-") {
		if part == "" {
			return nil, fmt.Errorf("%q has an empty component", p)
		}
		out = append(out, strings.ReplaceAll(part, "_", "-"))
	}
	return out, nil
}

// Path is n as the driver spells it on the filesystem (below each
// controller's mount point).
func (d Driver) Path(n Name) string {
	if d == DriverSystemd {
		return n.Systemd()
	}
	return n.Cgroupfs()
}

// Parse reads a path the driver wrote back into a Name.
func (d Driver) Parse(p string) (Name, error) {
	if d == DriverSystemd {
		return ParseSystemd(p)
	}
	return ParseCgroupfs(p), nil
}

// CgroupParent is what the CRI expects in a sandbox's cgroup_parent for n:
// the cgroupfs path, or with systemd the slice path (runtimes take its last
// element, "kubepods-burstable-pod<uid>.slice", as the parent slice).
func (d Driver) CgroupParent(n Name) string { return d.Path(n) }

// Base is the last path element the driver gives n's last component, the
// name of the directory holding it: "pod<uid>" or "kubepods-...-pod<uid>.slice".
func (d Driver) Base(n Name) string { return path.Base(d.Path(n)) }

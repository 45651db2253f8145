package stats

import (
	"os"
	"path/filepath"
	"strings"
)

// The tests build cgroup trees in temporary directories, where no mount
// table names them; these find the layout from the directory names.

// detectCgroupLayout inspects root once; an unreadable root gives a layout
// that finds no cgroup.
func detectCgroupLayout(root string) cgroupLayout {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return layoutFromEntries(root, nil, true)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return layoutFromEntries(root, nil, false)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return layoutFromEntries(root, names, false)
}

// layoutFromEntries decides the controller mounts from the names under the
// cgroup root. Single-controller names win over joined ones ("cpu,cpuacct"),
// which are usually the real directory behind the single-name symlinks.
func layoutFromEntries(root string, names []string, unified bool) cgroupLayout {
	l := cgroupLayout{Root: root, Unified: unified, Mounts: map[string]string{}}
	if unified {
		return l
	}
	for _, n := range names {
		if !strings.Contains(n, ",") {
			l.Mounts[n] = filepath.Join(root, n)
		}
	}
	for _, n := range names {
		if !strings.Contains(n, ",") {
			continue
		}
		for _, c := range strings.Split(n, ",") {
			if _, ok := l.Mounts[c]; !ok {
				l.Mounts[c] = filepath.Join(root, n)
			}
		}
	}
	return l
}

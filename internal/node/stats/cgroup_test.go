package stats

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// writeTree creates files (path relative to root → content) under root.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cgroupV1Tree is a v1 hierarchy with separate cpu and cpuacct mounts, as
// on the CI machine, holding the root and /kubepods/burstable/pod<uid>.
func cgroupV1Tree(t *testing.T) string {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"cpu/cpu.shares":                                               "1024\n",
		"cpuacct/cpuacct.usage":                                        "4000000000\n",
		"memory/memory.usage_in_bytes":                                 "1000000\n",
		"memory/memory.limit_in_bytes":                                 "9223372036854771712\n",
		"memory/memory.stat":                                           "cache 5\nrss 6\ntotal_cache 600000\ntotal_rss 300000\ntotal_inactive_file 250000\ntotal_pgfault 77\ntotal_pgmajfault 3\nhierarchical_memory_limit 9223372036854771712\n",
		"pids/pids.current":                                            "12\n",
		"cpuacct/kubepods/cpuacct.usage":                               "2000000000\n",
		"memory/kubepods/memory.stat":                                  "total_inactive_file 0\n",
		"memory/kubepods/memory.usage_in_bytes":                        "4096\n",
		"cpuacct/kubepods/burstable/podu-1/cpuacct.usage":              "1500\n",
		"memory/kubepods/burstable/podu-1/memory.usage_in_bytes":       "8000\n",
		"memory/kubepods/burstable/podu-1/memory.limit_in_bytes":       "10000\n",
		"memory/kubepods/burstable/podu-1/memory.memsw.usage_in_bytes": "8500\n",
		"memory/kubepods/burstable/podu-1/memory.stat":                 "total_inactive_file 3000\ntotal_rss 4000\ntotal_pgfault 10\ntotal_pgmajfault 1\n",
		"pids/kubepods/burstable/podu-1/pids.current":                  "4\n",
	})
	return root
}

// cgroupV2Tree is a unified hierarchy with a systemd-driver pod slice.
func cgroupV2Tree(t *testing.T) string {
	root := t.TempDir()
	pod := "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu_2.slice/"
	writeTree(t, root, map[string]string{
		"cgroup.controllers":        "cpu memory pids\n",
		"cpu.stat":                  "usage_usec 5000000\nuser_usec 4000000\nsystem_usec 1000000\n",
		"memory.stat":               "anon 700\nfile 900\ninactive_file 400\npgfault 20\npgmajfault 2\n",
		pod + "cpu.stat":            "usage_usec 1500\n",
		pod + "memory.current":      "9000\n",
		pod + "memory.max":          "max\n",
		pod + "memory.swap.current": "100\n",
		pod + "memory.stat":         "anon 5000\ninactive_file 1000\npgfault 30\npgmajfault 4\n",
		pod + "pids.current":        "3\n",
	})
	return root
}

func TestLayoutFromEntries(t *testing.T) {
	tests := []struct {
		name    string
		names   []string
		unified bool
		want    map[string]string
	}{
		{
			name:  "separate mounts",
			names: []string{"cpu", "cpuacct", "memory", "pids", "unified", "systemd"},
			want:  map[string]string{"cpu": "/r/cpu", "cpuacct": "/r/cpuacct", "memory": "/r/memory", "pids": "/r/pids", "unified": "/r/unified", "systemd": "/r/systemd"},
		},
		{
			name:  "joined mount without symlinks",
			names: []string{"cpu,cpuacct", "memory"},
			want:  map[string]string{"cpu": "/r/cpu,cpuacct", "cpuacct": "/r/cpu,cpuacct", "memory": "/r/memory"},
		},
		{
			name:  "joined mount with symlinks prefers the single names",
			names: []string{"cpu", "cpu,cpuacct", "cpuacct", "memory"},
			want:  map[string]string{"cpu": "/r/cpu", "cpuacct": "/r/cpuacct", "memory": "/r/memory"},
		},
		{name: "unified ignores entries", names: []string{"memory"}, unified: true, want: map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := layoutFromEntries("/r", tc.names, tc.unified)
			if got.Unified != tc.unified || !reflect.DeepEqual(got.Mounts, tc.want) {
				t.Errorf("got %+v, want unified=%v mounts %v", got, tc.unified, tc.want)
			}
		})
	}
}

func TestCgroupRead(t *testing.T) {
	v1, v2 := cgroupV1Tree(t), cgroupV2Tree(t)
	tests := []struct {
		name    string
		root    string
		rel     string
		want    cgroupSample
		wantErr error
	}{
		{
			name: "v1 root: hierarchical counters, no limit",
			root: v1, rel: "/",
			want: cgroupSample{CPUNanos: u64(4000000000), MemUsage: u64(1000000), InactiveFile: u64(250000), RSS: u64(300000), PageFaults: u64(77), MajorPageFaults: u64(3), Pids: u64(12)},
		},
		{
			name: "v1 pod cgroup with a limit and memsw swap",
			root: v1, rel: "/kubepods/burstable/podu-1",
			want: cgroupSample{CPUNanos: u64(1500), MemUsage: u64(8000), MemLimit: u64(10000), InactiveFile: u64(3000), RSS: u64(4000), PageFaults: u64(10), MajorPageFaults: u64(1), SwapUsage: u64(500), Pids: u64(4)},
		},
		{
			name: "v2 root: cpu.stat and memory.stat only",
			root: v2, rel: "/",
			want: cgroupSample{CPUNanos: u64(5000000000), InactiveFile: u64(400), RSS: u64(700), PageFaults: u64(20), MajorPageFaults: u64(2)},
		},
		{
			name: "v2 pod slice: max is no limit",
			root: v2, rel: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu_2.slice",
			want: cgroupSample{CPUNanos: u64(1500000), MemUsage: u64(9000), InactiveFile: u64(1000), RSS: u64(5000), PageFaults: u64(30), MajorPageFaults: u64(4), SwapUsage: u64(100), Pids: u64(3)},
		},
		{name: "v1 missing cgroup", root: v1, rel: "/nope", wantErr: errCgroupNotFound},
		{name: "v2 missing cgroup", root: v2, rel: "/nope", wantErr: errCgroupNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := detectCgroupLayout(tc.root).read(tc.rel)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if got.Created.IsZero() {
				t.Errorf("Created not set")
			}
			got.Created = time.Time{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %s\nwant %s", dumpSample(got), dumpSample(tc.want))
			}
		})
	}
}

func dumpSample(s cgroupSample) map[string]any {
	out := map[string]any{}
	v := reflect.ValueOf(s)
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if p, ok := f.Interface().(*uint64); ok {
			if p != nil {
				out[v.Type().Field(i).Name] = *p
			}
		}
	}
	return out
}

func TestPodsCgroupAndExists(t *testing.T) {
	v1, v2 := cgroupV1Tree(t), cgroupV2Tree(t)
	tests := []struct {
		name   string
		root   string
		want   string
		wantOK bool
	}{
		{name: "v1 cgroupfs kubepods", root: v1, want: "/kubepods", wantOK: true},
		{name: "v2 systemd kubepods.slice", root: v2, want: "/kubepods.slice", wantOK: true},
		{name: "no pod cgroup", root: t.TempDir(), wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := detectCgroupLayout(tc.root).podsCgroup()
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestParseCgroupValue(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    uint64
		wantOK  bool
		wantErr bool
	}{
		{name: "number", in: "123\n", want: 123, wantOK: true},
		{name: "max", in: "max\n", wantOK: false},
		{name: "garbage", in: "12a", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := parseCgroupValue([]byte(tc.in))
			if (err != nil) != tc.wantErr || ok != tc.wantOK || got != tc.want {
				t.Errorf("got %d, %v, %v", got, ok, err)
			}
		})
	}
}

func TestParseFlatKeyed(t *testing.T) {
	got := parseFlatKeyed([]byte("usage_usec 10\nnr_periods 0\nbogus line here\nneg -1\n"))
	want := map[string]uint64{"usage_usec": 10, "nr_periods": 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestWorkingSet(t *testing.T) {
	tests := []struct {
		name                  string
		usage, inactive, want uint64
	}{
		{name: "usage less inactive file", usage: 1000, inactive: 300, want: 700},
		{name: "inactive above usage floors at zero", usage: 100, inactive: 300, want: 0},
		{name: "no inactive", usage: 100, want: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := workingSet(tc.usage, tc.inactive); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMemoryStats(t *testing.T) {
	now := time.Unix(5, 0)
	tests := []struct {
		name          string
		s             cgroupSample
		capacity      uint64
		wantNil       bool
		wantWS        uint64
		wantAvailable *uint64
	}{
		{name: "limit gives available", s: cgroupSample{MemUsage: u64(800), MemLimit: u64(1000), InactiveFile: u64(300)}, wantWS: 500, wantAvailable: u64(500)},
		{name: "capacity stands in for no limit", s: cgroupSample{MemUsage: u64(800), InactiveFile: u64(300)}, capacity: 2000, wantWS: 500, wantAvailable: u64(1500)},
		{name: "no limit no capacity: no available", s: cgroupSample{MemUsage: u64(800)}, wantWS: 800},
		{name: "over the limit floors at zero", s: cgroupSample{MemUsage: u64(1200), MemLimit: u64(1000)}, wantWS: 1200, wantAvailable: u64(0)},
		{name: "no usage: nil", s: cgroupSample{}, wantNil: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := memoryStats(tc.s, tc.capacity, now)
			if tc.wantNil {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			if *got.WorkingSetBytes != tc.wantWS || !reflect.DeepEqual(got.AvailableBytes, tc.wantAvailable) || !got.Time.Time.Equal(now) {
				t.Errorf("got ws %d available %v; want %d %v", *got.WorkingSetBytes, deref(got.AvailableBytes), tc.wantWS, deref(tc.wantAvailable))
			}
		})
	}
}

func TestPodCgroupOf(t *testing.T) {
	tests := []struct {
		name, cgroupsPath, uid, want string
		wantOK                       bool
	}{
		{name: "cgroupfs pod cgroup", cgroupsPath: "/kubepods/burstable/pod1234-ab/0123abcd", uid: "1234-ab", want: "/kubepods/burstable/pod1234-ab", wantOK: true},
		{name: "cgroupfs guaranteed pod", cgroupsPath: "/kubepods/pod1234-ab/0123abcd", uid: "1234-ab", want: "/kubepods/pod1234-ab", wantOK: true},
		{name: "systemd pod slice", cgroupsPath: "kubepods-besteffort-pod1234_ab.slice:cri-containerd:0123abcd", uid: "1234-ab", want: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234_ab.slice", wantOK: true},
		{name: "containerd default parent is shared", cgroupsPath: "/k8s.io/0123abcd", uid: "1234-ab", wantOK: false},
		{name: "another pod's cgroup", cgroupsPath: "/kubepods/burstable/pod9999/0123abcd", uid: "1234-ab", wantOK: false},
		{name: "empty path", cgroupsPath: "", uid: "1234-ab", wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := podCgroupOf(tc.cgroupsPath, tc.uid)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestExpandSlice(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "root slice", in: "-.slice", want: "/"},
		{name: "top level", in: "kubepods.slice", want: "/kubepods.slice"},
		{name: "nested", in: "kubepods-burstable-podx.slice", want: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podx.slice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := expandSlice(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAccountingCgroup(t *testing.T) {
	tests := []struct {
		name    string
		cg      map[string]string
		unified bool
		want    string
		wantOK  bool
	}{
		{name: "v1 same hierarchy", cg: map[string]string{"memory": "/system.slice/kubelet.service", "cpuacct": "/system.slice/kubelet.service"}, want: "/system.slice/kubelet.service", wantOK: true},
		{name: "v1 cpu at the root", cg: map[string]string{"memory": "/process_api/x", "cpuacct": "/"}, wantOK: false},
		{name: "v1 both at the root", cg: map[string]string{"memory": "/", "cpuacct": "/"}, wantOK: false},
		{name: "v2", cg: map[string]string{"": "/system.slice/containerd.service"}, unified: true, want: "/system.slice/containerd.service", wantOK: true},
		{name: "v2 root", cg: map[string]string{"": "/"}, unified: true, wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := accountingCgroup(tc.cg, tc.unified)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// joinCgroup is filepath.Join, faster for the paths cgroups have.
func TestJoinCgroupIsJoin(t *testing.T) {
	for _, m := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/", "/", "", "rel/dir", "/a/../b"} {
		for _, rel := range []string{"", "/", "/kubepods", "/kubepods/burstable/pod1/abc", "kubepods/x", "/a//b", "/a/./b", "/a/../b", "/a/", "/.hidden", "//"} {
			if got, want := joinCgroup(m, rel), filepath.Join(m, rel); got != want {
				t.Errorf("joinCgroup(%q, %q) = %q, want %q", m, rel, got, want)
			}
		}
	}
}

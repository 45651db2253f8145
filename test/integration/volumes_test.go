//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// Volumes a static pod can use without an API server: an emptyDir shared
// by an init container and the app container, a memory-backed emptyDir, a
// hostPath created on demand and a downwardAPI file. Removing the pod
// unmounts its tmpfs and removes its directory.
func TestStaticPodVolumes(t *testing.T) {
	k := framework.NewKubelet(t)
	hostDir := filepath.Join(t.TempDir(), "host-data")
	k.WriteManifest("vols.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: vols
  labels:
    tier: test
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: prepare
    image: %[1]s
    command: ["sh", "-c", "echo prepared > /shared/ready"]
    volumeMounts:
    - {name: shared, mountPath: /shared}
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "cat /shared/ready > /host/out; grep -c tmpfs /proc/mounts > /host/tmpfs; cat /info/labels > /host/labels; echo $MEM_LIMIT > /host/memenv; cat /info/memlimit > /host/memvol; sleep 3600"]
    env:
    - name: MEM_LIMIT
      valueFrom:
        resourceFieldRef: {resource: limits.memory, divisor: 1Mi}
    volumeMounts:
    - {name: shared, mountPath: /shared}
    - {name: ram, mountPath: /ram}
    - {name: host, mountPath: /host}
    - {name: info, mountPath: /info}
  volumes:
  - name: shared
    emptyDir: {}
  - name: ram
    emptyDir: {medium: Memory, sizeLimit: 8Mi}
  - name: host
    hostPath: {path: %[2]s, type: DirectoryOrCreate}
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
      - path: memlimit
        resourceFieldRef: {containerName: main, resource: limits.memory, divisor: 1Mi}
`, framework.BusyboxImage, hostDir))
	k.Start()
	p := k.WaitForPod("vols", podTimeout, "running", running)
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "files written through the volumes", func() (bool, error) {
		out, err := os.ReadFile(filepath.Join(hostDir, "out"))
		if err != nil {
			return false, err
		}
		labels, err := os.ReadFile(filepath.Join(hostDir, "labels"))
		if err != nil {
			return false, err
		}
		memvol, err := os.ReadFile(filepath.Join(hostDir, "memvol"))
		return strings.TrimSpace(string(out)) == "prepared" && strings.Contains(string(labels), `tier="test"`) && len(memvol) > 0, err
	})
	// Without a limit, limits.memory reads the node's allocatable (here
	// MemTotal less the default 100Mi hard eviction threshold), in the
	// environment and in the volume alike, as upstream.
	want := strconv.FormatInt((memTotalBytes(t)+(1<<20)-1)/(1<<20)-100, 10)
	for _, f := range []string{"memenv", "memvol"} {
		got, err := os.ReadFile(filepath.Join(hostDir, f))
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s: limits.memory without a limit = %q (err %v), want allocatable %sMi", f, strings.TrimSpace(string(got)), err, want)
		}
	}
	podDir := filepath.Join(k.RootDir, "pods", string(p.UID))
	ramDir := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "ram")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if !strings.Contains(string(mounts), ramDir) {
		t.Fatalf("the Memory emptyDir %s is not a mount", ramDir)
	}
	k.RemoveManifest("vols.yaml")
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "pod directory removed and tmpfs unmounted", func() (bool, error) {
		_, err := os.Stat(podDir)
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		return os.IsNotExist(err) && !strings.Contains(string(mounts), ramDir), err
	})
	if _, err := os.Stat(filepath.Join(hostDir, "out")); err != nil {
		t.Fatalf("hostPath data must survive the pod: %v", err)
	}
}

// A static pod fills a disk emptyDir with 20MiB and a Memory one with
// 1MiB: /stats/summary reports both volumes (and its downwardAPI one, but
// not its hostPath) with the filesystem holding each, and counts the disk
// emptyDir, not the tmpfs, in the pod's ephemeral storage.
func TestVolumeStatsInSummary(t *testing.T) {
	const mi = 1 << 20
	k := framework.NewKubelet(t, "volumeStatsAggPeriod: 2s")
	k.WriteManifest("fill.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: fill
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "dd if=/dev/zero of=/scratch/fill bs=1M count=20 && dd if=/dev/zero of=/ram/fill bs=1M count=1 && touch /scratch/done && sleep 3600"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: ram, mountPath: /ram}
    - {name: info, mountPath: /info}
    - {name: host, mountPath: /host}
  volumes:
  - name: scratch
    emptyDir: {}
  - name: ram
    emptyDir: {medium: Memory, sizeLimit: 8Mi}
  - name: info
    downwardAPI:
      items:
      - path: name
        fieldRef: {fieldPath: metadata.name}
  - name: host
    hostPath: {path: %[2]s, type: DirectoryOrCreate}
`, framework.BusyboxImage, filepath.Join(t.TempDir(), "host")))
	k.Start()
	p := k.WaitForPod("fill", podTimeout, "running", running)
	done := filepath.Join(k.RootDir, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "scratch", "done")
	framework.Eventually(t, 60*time.Second, 200*time.Millisecond, "the writer done", func() (bool, error) {
		_, err := os.Stat(done)
		return err == nil, nil
	})

	var ps statsapi.PodStats
	vols := map[string]statsapi.VolumeStats{}
	framework.Eventually(t, 30*time.Second, 500*time.Millisecond, "the filled volumes in /stats/summary", func() (bool, error) {
		s, err := summary(k)
		if err != nil {
			return false, err
		}
		for _, cand := range s.Pods {
			if cand.PodRef.UID == string(p.UID) {
				ps = cand
			}
		}
		clear(vols)
		for _, v := range ps.VolumeStats {
			vols[v.Name] = v
		}
		sc, ram := vols["scratch"], vols["ram"]
		if sc.UsedBytes == nil || ram.UsedBytes == nil {
			return false, fmt.Errorf("volumes %v", ps.VolumeStats)
		}
		return *sc.UsedBytes >= 20*mi && *ram.UsedBytes >= mi, fmt.Errorf("scratch %d ram %d bytes", *sc.UsedBytes, *ram.UsedBytes)
	})
	if len(vols) != 3 || vols["info"].UsedBytes == nil {
		t.Errorf("volumes = %v, want scratch, ram and info (no hostPath)", ps.VolumeStats)
	}
	sc, ram := vols["scratch"], vols["ram"]
	t.Logf("scratch %d bytes %d inodes; ram %d bytes; ephemeral storage %d bytes", *sc.UsedBytes, *sc.InodesUsed, *ram.UsedBytes, *ps.EphemeralStorage.UsedBytes)
	if *sc.InodesUsed != 3 || *sc.CapacityBytes != *ps.EphemeralStorage.CapacityBytes || *sc.AvailableBytes == 0 {
		t.Errorf("scratch = %+v: want 3 inodes on the nodefs", sc.FsStats)
	}
	if *ram.CapacityBytes != 8*mi || *ram.AvailableBytes > 7*mi {
		t.Errorf("ram = %+v: want the 8Mi tmpfs with 1Mi used", ram.FsStats)
	}
	// The rest (writable layer, logs, etc-hosts, the downwardAPI file) is
	// far below the tmpfs's 1Mi, which must not be counted.
	if u := *ps.EphemeralStorage.UsedBytes; u < *sc.UsedBytes || u >= *sc.UsedBytes+*ram.UsedBytes {
		t.Errorf("ephemeral storage %d bytes: want the scratch volume's %d and little more (not the tmpfs)", u, *sc.UsedBytes)
	}

	// The kubelet unmounts the tmpfs when the pod goes; the test's temp
	// dir could not be removed otherwise.
	k.RemoveManifest("fill.yaml")
	podDir := filepath.Join(k.RootDir, "pods", string(p.UID))
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "pod directory removed", func() (bool, error) {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err), err
	})
}

// summary reads /stats/summary from the read-only port.
func summary(k *framework.Kubelet) (*statsapi.Summary, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/stats/summary", k.ReadOnlyPort))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /stats/summary: %s", resp.Status)
	}
	var s statsapi.Summary
	return &s, json.NewDecoder(resp.Body).Decode(&s)
}

// memTotalBytes is MemTotal from /proc/meminfo.
func memTotalBytes(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

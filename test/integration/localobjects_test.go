//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// configMapManifest is a local ConfigMap named name with one key.
func configMapManifest(name, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  %s: %q\n", name, key, value)
}

// readerPod mounts config map cfg and secret creds (each alone and both in
// one projected volume), reads a key of each into env, and prints what it
// sees.
func readerPod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo env=$GREETING/$PASSWORD; cat /cfg/greeting; echo; cat /creds/password; echo; echo projected=$(cat /all/greeting)/$(cat /all/pw); sleep 3600"]
    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: cfg, key: greeting}}
    envFrom:
    - secretRef: {name: creds}
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: creds, mountPath: /creds}
    - {name: all, mountPath: /all}
  volumes:
  - name: cfg
    configMap: {name: cfg}
  - name: creds
    secret: {secretName: creds}
  - name: all
    projected:
      sources:
      - configMap: {name: cfg}
      - secret: {name: creds, items: [{key: password, path: pw}]}
`, name, framework.BusyboxImage)
}

const credsSecret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  PASSWORD: s3cret\n  password: s3cret\n"

func containerLog(t *testing.T, p *v1.Pod) string {
	t.Helper()
	path := filepath.Join("/var/log/pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "main", "0.log")
	data, _ := os.ReadFile(path)
	return string(data)
}

// volumeFile is a file of a pod's configMap volume on the host.
func volumeFile(k *framework.Kubelet, p *v1.Pod, plugin, volume, key string) string {
	return filepath.Join(k.RootDir, "pods", string(p.UID), "volumes", plugin, volume, key)
}

func TestLocalObjectsFeedVolumesAndEnv(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("app.yaml", readerPod("reader")+"---\n"+configMapManifest("cfg", "greeting", "hello")+"---\n"+credsSecret)
	k.Start()
	p := k.WaitForPod("reader", podTimeout, "running", running)
	framework.Eventually(t, 10*time.Second, 100*time.Millisecond, "the pod's output", func() (bool, error) {
		out := containerLog(t, p)
		return strings.Contains(out, "env=hello/s3cret") && strings.Contains(out, " hello\n") && strings.Contains(out, " s3cret\n") &&
			strings.Contains(out, "projected=hello/s3cret"), fmt.Errorf("log %q", out)
	})

	// An edit of the ConfigMap reaches the mounted file at once (the store
	// wakes the pod's worker; no wait for the sync period).
	start := time.Now()
	k.WriteManifest("app.yaml", readerPod("reader")+"---\n"+configMapManifest("cfg", "greeting", "bonjour")+"---\n"+credsSecret)
	file := volumeFile(k, p, "kubernetes.io~configmap", "cfg", "greeting")
	framework.Eventually(t, 10*time.Second, 20*time.Millisecond, "the edited config map in "+file, func() (bool, error) {
		data, err := os.ReadFile(file)
		return string(data) == "bonjour", fmt.Errorf("%q, %v", data, err)
	})
	t.Logf("config map edit reached the mounted file in %v", time.Since(start).Round(time.Millisecond))
	if now, _ := k.Pod("reader"); now == nil || now.UID != p.UID {
		t.Fatalf("the pod was replaced by the config map edit")
	}
}

func TestPodWaitsForMissingLocalObjectsThenStarts(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("reader.yaml", readerPod("reader"))
	k.WriteManifest("env-only.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: envonly
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo mode=$MODE; sleep 3600"]
    env:
    - name: MODE
      valueFrom: {configMapKeyRef: {name: settings, key: mode}}
`, framework.BusyboxImage))
	k.Start()
	// The volumes are missing: ContainerCreating (FailedMount).
	k.WaitForPod("reader", podTimeout, "waiting in ContainerCreating", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodPending && containerState(p).State.Waiting != nil && containerState(p).State.Waiting.Reason == "ContainerCreating"
	})
	// The env source is missing: CreateContainerConfigError, with upstream's
	// wording of the missing object.
	k.WaitForPod("envonly", podTimeout, "CreateContainerConfigError", func(p *v1.Pod) bool {
		w := containerState(p).State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && strings.HasSuffix(w.Message, `configmap "settings" not found`)
	})
	// Let the mount back-off grow past the first retries: the pods must not
	// wait for it once the objects appear.
	time.Sleep(3 * time.Second)

	start := time.Now()
	k.WriteManifest("objects.yaml", configMapManifest("cfg", "greeting", "hi")+"---\n"+credsSecret+"---\n"+configMapManifest("settings", "mode", "fast"))
	k.WaitForPod("reader", podTimeout, "running", running)
	readerLatency := time.Since(start)
	k.WaitForPod("envonly", podTimeout, "running", running)
	t.Logf("pods started %v (volumes) and %v (env) after their objects appeared", readerLatency.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if readerLatency > 5*time.Second {
		t.Errorf("the pod waiting for its volumes took %v to start after they appeared", readerLatency)
	}
}

func TestInvalidLocalObjectIsLoggedAndSkipped(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("mixed.yaml", manifest("web", "Always", "sleep 3600")+"---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  \"a/b\": x\n")
	k.Start()
	k.WaitForPod("web", podTimeout, "running beside an invalid ConfigMap", running)
	framework.Eventually(t, 10*time.Second, 100*time.Millisecond, "the log line naming the file", func() (bool, error) {
		data, _ := os.ReadFile(k.LogPath)
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "Skipping invalid documents of manifest") && strings.Contains(line, "mixed.yaml") &&
				strings.Contains(line, `ConfigMap \"bad\" is invalid: data[a/b]: Invalid value: \"a/b\"`) {
				return true, nil
			}
		}
		return false, fmt.Errorf("no such line")
	})
}

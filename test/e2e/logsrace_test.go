//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The conformance spec "Pods should support retrieving logs from the
// container over websockets" reads the log the moment the pod is Running.
func TestLogsRightAfterRunning(t *testing.T) {
	n := joinNode(t, "podLogsDir: "+t.TempDir())
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("logs-%d", i)
		p := podOn(n.NodeName, name, "/bin/sh", "-c", "echo container is alive; sleep 10000")
		w, err := n.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var startedAt time.Time
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			pod := ev.Object.(*v1.Pod)
			if pod.Status.Phase == v1.PodRunning {
				startedAt = pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
				break
			}
		}
		w.Stop()
		seen := time.Now()
		out, err := n.client.CoreV1().Pods(ns).GetLogs(name, &v1.PodLogOptions{Container: "main"}).Do(context.Background()).Raw()
		t.Logf("%s: Running seen %v after start; log %q err %v", name, seen.Sub(startedAt), out, err)
	}
	data, _ := os.ReadFile(n.LogPath)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "logs-") && (strings.Contains(l, "Started container") || strings.Contains(l, "Patched pod status") || strings.Contains(l, "Created pod sandbox") || strings.Contains(l, "SyncLoop") || strings.Contains(l, "olume")) {
			t.Log(l)
		}
	}
}

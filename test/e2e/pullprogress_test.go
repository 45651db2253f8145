//go:build e2e

package e2e

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

const (
	// bigImageSize is the random (incompressible) file in the big image's
	// layer, and throttleRate what the proxy lets through: a pull of about
	// 32 s, so three progress updates at 10 s intervals.
	bigImageSize = 32 << 20
	throttleRate = 1 << 20
)

// bigImage pushes an image to the loopback registry (127.0.0.1:5000) with
// crane: busybox and a layer of size bytes of random data. It returns the
// repository and tag, and removes its manifest and blobs from the registry
// (which keeps them in memory) when the test ends.
func bigImage(t *testing.T, size int64) (repo, tag string) {
	t.Helper()
	crane := filepath.Join(framework.BinDir(), "crane")
	if _, err := os.Stat(crane); err != nil {
		t.Fatalf("%s is missing: run hack/setup-node.sh", crane)
	}
	layer := filepath.Join(t.TempDir(), "layer.tar")
	f, err := os.Create(layer)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "big.bin", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	repo, tag = ifw.UniqueName("pullprogress"), "1"
	ref := ifw.RegistryAddr + "/" + repo + ":" + tag
	run := func(args ...string) []byte {
		out, err := exec.Command(crane, append(args, "--insecure")...).Output()
		if err != nil {
			t.Fatalf("crane %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	run("append", "-b", ifw.RegistryBusyboxImage, "-f", layer, "-t", ref)
	var m struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(run("manifest", ref), &m); err != nil {
		t.Fatal(err)
	}
	manifest := strings.TrimSpace(string(run("digest", ref)))
	t.Cleanup(func() {
		// The registry's busybox blobs stay: busybox:1.36 uses them.
		paths := []string{"manifests/" + manifest, "blobs/" + m.Config.Digest, "blobs/" + m.Layers[len(m.Layers)-1].Digest}
		for _, p := range paths {
			req, _ := http.NewRequest(http.MethodDelete, "http://"+ifw.RegistryAddr+"/v2/"+repo+"/"+p, nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	})
	return repo, tag
}

// throttledRegistry serves the loopback registry on a port of its own on
// loopback, sending blobs at rate bytes per second. containerd pulls from
// "localhost:PORT" over plain HTTP. It returns that address.
func throttledRegistry(t *testing.T, rate int) string {
	t.Helper()
	target, _ := url.Parse("http://" + ifw.RegistryAddr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			w = &throttled{ResponseWriter: w, rate: rate, start: time.Now()}
		}
		proxy.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return fmt.Sprintf("localhost:%d", ln.Addr().(*net.TCPAddr).Port)
}

// throttled writes at most rate bytes per second on average.
type throttled struct {
	http.ResponseWriter
	rate    int
	start   time.Time
	written int
}

func (w *throttled) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), 16<<10)]
		m, err := w.ResponseWriter.Write(chunk)
		n, w.written = n+m, w.written+m
		if err != nil {
			return n, err
		}
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		// Bandwidth shaping, not synchronisation: wait until the bytes sent
		// so far are within the rate.
		time.Sleep(time.Until(w.start.Add(time.Duration(w.written) * time.Second / time.Duration(w.rate))))
		p = p[m:]
	}
	return n, nil
}

// A pull that takes long updates the pod's Pulling event in place: the
// same event (client-go's correlator counts it) with bytes done of total
// and the rate, read from containerd's content store, and logs it at -v=2.
func TestImagePullProgress(t *testing.T) {
	repo, tag := bigImage(t, bigImageSize)
	image := throttledRegistry(t, throttleRate) + "/" + repo + ":" + tag

	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	pod := podOn(n.NodeName, "big")
	pod.Spec.Containers[0].Image = image
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Watch the Pulling event while the image comes in.
	var mu sync.Mutex
	var seen []string // distinct Pulling messages, in order
	var pulling v1.Event
	selector := fields.Set{"involvedObject.name": "big", "reason": "Pulling"}.String()
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			l, err := n.client.CoreV1().Events(ns).List(watchCtx, metav1.ListOptions{FieldSelector: selector})
			if err == nil && len(l.Items) > 0 {
				mu.Lock()
				pulling = l.Items[len(l.Items)-1]
				if len(seen) == 0 || seen[len(seen)-1] != pulling.Message {
					seen = append(seen, pulling.Message)
				}
				mu.Unlock()
			}
			select {
			case <-watchCtx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	eventually(t, 3*time.Minute, "pod big running", func() (bool, error) {
		p, err := n.client.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		return err == nil && podRunning(p), err
	})
	stopWatch()
	<-watched
	t.Logf("pulled and running after %v; Pulling messages: %q", time.Since(start).Round(time.Millisecond), seen)

	// One Pulling event: the announcement, then at least two updates.
	l, err := n.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 {
		t.Fatalf("%d Pulling events, want one updated in place: %+v", len(l.Items), l.Items)
	}
	pulling = l.Items[0]
	progress := regexp.MustCompile(`^Pulling image "` + regexp.QuoteMeta(image) + `": ([0-9.]+ [KMG]?i?B) of 3[0-9]\.[0-9] MiB \(([0-9]+)%\), (unpacking|[0-9.]+ [KM]?i?B/s)$`)
	var updates []string
	for _, m := range seen {
		if progress.MatchString(m) {
			updates = append(updates, m)
		} else if m != fmt.Sprintf("Pulling image %q", image) {
			t.Errorf("Pulling message %q is neither the announcement nor a progress update", m)
		}
	}
	if len(updates) < 2 {
		t.Errorf("saw %d progress updates of the Pulling event (%q), want at least 2", len(updates), seen)
	}
	if pulling.Count < 3 || !progress.MatchString(pulling.Message) {
		t.Errorf("Pulling event count %d message %q: want the announcement and at least 2 updates", pulling.Count, pulling.Message)
	}
	if _, ok := pulling.Annotations["kubelet.seed-kubelet.io/progress"]; ok {
		t.Errorf("the progress annotation reached the API: %v", pulling.Annotations)
	}
	pulled, err := n.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{"involvedObject.name": "big", "reason": "Pulled"}.String()})
	if err != nil || len(pulled.Items) != 1 || !strings.HasPrefix(pulled.Items[0].Message, "Successfully pulled image") {
		t.Errorf("Pulled event: %v %+v", err, pulled)
	}
	logData, err := os.ReadFile(n.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(logData), `"Image pull progress"`); lines < 2 {
		t.Errorf("%d \"Image pull progress\" lines in the kubelet log at -v=3, want at least 2", lines)
	}
}

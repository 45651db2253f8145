//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
)

// websocketLogs reads a container's log through the API server's
// pods/log over a websocket (protocol binary.k8s.io), as the conformance
// spec "Pods should support retrieving logs from the container over
// websockets" does, skipping empty messages as it does.
func websocketLogs(t *testing.T, ns, pod, container string) string {
	t.Helper()
	pem, err := os.ReadFile(framework.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(filepath.Join(framework.PKIDir, "admin.crt"), filepath.Join(framework.PKIDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
		Subprotocols: []string{"binary.k8s.io"}, HandshakeTimeout: 10 * time.Second}
	url := strings.Replace(framework.APIServerURL, "https://", "wss://", 1) +
		"/api/v1/namespaces/" + ns + "/pods/" + pod + "/log?container=" + container
	ws, resp, err := d.Dial(url, http.Header{})
	if err != nil {
		t.Fatalf("websocket %s: %v (%v)", url, err, resp)
	}
	defer ws.Close()
	var buf bytes.Buffer
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) || strings.Contains(err.Error(), "EOF") {
				break
			}
			t.Fatalf("read websocket: %v", err)
		}
		if len(strings.TrimSpace(string(msg))) > 0 {
			buf.Write(msg)
		}
	}
	return buf.String()
}

// The conformance spec's pod (restricted security, as its mixin makes it),
// read over a websocket the moment it is Ready.
func TestPodLogsOverWebSocket(t *testing.T) {
	n := joinNode(t, "podLogsDir: "+t.TempDir())
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	for _, restricted := range []bool{false, true} {
		p := podOn(n.NodeName, "ws-logs", "/bin/sh", "-c", "echo container is alive; sleep 10000")
		if restricted {
			p.Name = "ws-logs-restricted"
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}}
		}
		if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPod(t, n.client, ns, p.Name, "running", podRunning)
		got := websocketLogs(t, ns, p.Name, "main")
		plain, err := n.client.CoreV1().Pods(ns).GetLogs(p.Name, &v1.PodLogOptions{Container: "main"}).Do(context.Background()).Raw()
		if got != "container is alive\n" {
			t.Errorf("%s: websocket logs %q (plain GET %q, err %v)", p.Name, got, plain, err)
		}
	}
}

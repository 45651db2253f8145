package pluginwatcher

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// plugin is a registration server as node-driver-registrar runs one.
type plugin struct {
	registerapi.UnimplementedRegistrationServer
	info   *registerapi.PluginInfo
	status chan *registerapi.RegistrationStatus
	srv    *grpc.Server
}

func (p *plugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return p.info, nil
}

func (p *plugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.status <- s
	return &registerapi.RegistrationStatusResponse{}, nil
}

func servePlugin(t *testing.T, socket string, info *registerapi.PluginInfo) *plugin {
	t.Helper()
	os.Remove(socket)
	// Listen elsewhere and move the socket in: the watcher must not see a
	// socket that is bound but not listening yet (it would be refused and
	// wait out a back-off on the test's fake clock).
	tmp := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, socket); err != nil {
		t.Fatal(err)
	}
	p := &plugin{info: info, status: make(chan *registerapi.RegistrationStatus, 10), srv: grpc.NewServer()}
	registerapi.RegisterRegistrationServer(p.srv, p)
	go p.srv.Serve(l)
	t.Cleanup(p.srv.Stop)
	return p
}

type call struct {
	op, name, endpoint string
}

type handler struct {
	calls  chan call
	refuse error
}

func (h *handler) ValidatePlugin(name, endpoint string, versions []string) error {
	if len(versions) == 0 {
		return errors.New("no versions")
	}
	return nil
}

func (h *handler) RegisterPlugin(name, endpoint string, _ []string, _ *time.Duration) error {
	h.calls <- call{"register", name, endpoint}
	return h.refuse
}

func (h *handler) DeRegisterPlugin(name, endpoint string) {
	h.calls <- call{"deregister", name, endpoint}
}

func next[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func startWatcher(t *testing.T, dir string, h Handler, clk *testingclock.FakeClock) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := New(Config{Dir: dir, Handlers: map[string]Handler{registerapi.CSIPlugin: h}, Clock: clk})
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRegistersAndDeregistersASocket(t *testing.T) {
	dir := t.TempDir()
	h := &handler{calls: make(chan call, 10)}
	startWatcher(t, dir, h, testingclock.NewFakeClock(time.Now()))
	socket := filepath.Join(dir, "hostpath.csi.k8s.io-reg.sock")
	p := servePlugin(t, socket, &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "hostpath.csi.k8s.io", Endpoint: "/var/lib/kubelet/plugins/hp/csi.sock", SupportedVersions: []string{"1.0.0"}})

	if c := next(t, h.calls, "registration"); c != (call{"register", "hostpath.csi.k8s.io", "/var/lib/kubelet/plugins/hp/csi.sock"}) {
		t.Fatalf("got %+v", c)
	}
	if s := next(t, p.status, "registration status"); !s.PluginRegistered || s.Error != "" {
		t.Fatalf("status %+v, want registered", s)
	}
	if err := os.Remove(socket); err != nil {
		t.Fatal(err)
	}
	if c := next(t, h.calls, "de-registration"); c != (call{"deregister", "hostpath.csi.k8s.io", "/var/lib/kubelet/plugins/hp/csi.sock"}) {
		t.Fatalf("got %+v", c)
	}
}

func TestSocketsPresentAtStartRegister(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "nested")
	if err := os.Mkdir(sub, 0o750); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(sub, "reg.sock")
	p := servePlugin(t, socket, &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "d", SupportedVersions: []string{"1.0.0"}})
	h := &handler{calls: make(chan call, 10)}
	startWatcher(t, dir, h, testingclock.NewFakeClock(time.Now()))
	// No endpoint in GetInfo: the registration socket is the endpoint.
	if c := next(t, h.calls, "registration"); c != (call{"register", "d", socket}) {
		t.Fatalf("got %+v", c)
	}
	next(t, p.status, "registration status")
}

func TestUnknownTypeIsRefusedToThePlugin(t *testing.T) {
	dir := t.TempDir()
	h := &handler{calls: make(chan call, 10)}
	startWatcher(t, dir, h, testingclock.NewFakeClock(time.Now()))
	p := servePlugin(t, filepath.Join(dir, "x.sock"), &registerapi.PluginInfo{Type: "Gadget", Name: "x", SupportedVersions: []string{"1.0.0"}})
	s := next(t, p.status, "registration status")
	if s.PluginRegistered || s.Error == "" {
		t.Fatalf("status %+v, want a refusal", s)
	}
}

func TestFailedRegistrationIsRetriedAfterBackOff(t *testing.T) {
	dir := t.TempDir()
	h := &handler{calls: make(chan call, 10), refuse: errors.New("NodeGetInfo: driver not ready")}
	clk := testingclock.NewFakeClock(time.Now())
	startWatcher(t, dir, h, clk)
	p := servePlugin(t, filepath.Join(dir, "d.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "d", SupportedVersions: []string{"1.0.0"}})
	next(t, h.calls, "first registration")
	if s := next(t, p.status, "failure status"); s.PluginRegistered {
		t.Fatalf("status %+v, want failure", s)
	}
	// Not before the back-off (500ms)...
	clk.Step(time.Second / 4)
	select {
	case c := <-h.calls:
		t.Fatalf("retried before the back-off: %+v", c)
	case <-time.After(200 * time.Millisecond):
	}
	// ...but after it.
	for i := 0; i < 4; i++ {
		clk.Step(time.Second)
	}
	next(t, h.calls, "retry")
}

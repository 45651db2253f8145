package pluginwatcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/backoff"
)

// Handler registers plugins of one type (upstream's PluginHandler).
type Handler interface {
	// ValidatePlugin checks a plugin before it is registered.
	ValidatePlugin(name, endpoint string, versions []string) error
	// RegisterPlugin makes the plugin usable; an error is reported to the
	// plugin and the registration is retried.
	RegisterPlugin(name, endpoint string, versions []string, timeout *time.Duration) error
	// DeRegisterPlugin is called when the plugin's socket went away.
	DeRegisterPlugin(name, endpoint string)
}

// Timeouts of the registration calls, as upstream's.
const (
	infoTimeout   = 10 * time.Second
	notifyTimeout = 5 * time.Second
)

// Back-off of a socket whose registration failed (upstream's
// exponential back-off of plugin operations).
const (
	retryInitial = 500 * time.Millisecond
	retryMax     = 2*time.Minute + 2*time.Second
)

// Config configures a Watcher.
type Config struct {
	// Dir is the registration directory, <root-dir>/plugins_registry;
	// created when missing. Required.
	Dir string
	// Handlers by plugin type (registerapi.CSIPlugin, ...). Required.
	Handlers map[string]Handler
	// Clock paces retries and stamps socket creations. Required.
	Clock clock.WithTicker
	// Period is how often registrations are reconciled besides file
	// events (upstream: 1s); zero means 1s.
	Period time.Duration
}

type registration struct {
	created        time.Time
	name, endpoint string
	handler        Handler
}

// Watcher watches Dir and registers the plugins whose sockets appear.
type Watcher struct {
	cfg     Config
	backoff *flowcontrol.Backoff
	kick    chan struct{}

	mu       sync.Mutex
	desired  map[string]time.Time // socket path → when it was (re)created
	actual   map[string]registration
	busy     map[string]bool      // a registration is running
	failedAt map[string]time.Time // last failed registration
}

// New returns a Watcher for cfg.
func New(cfg Config) *Watcher {
	if cfg.Period <= 0 {
		cfg.Period = time.Second
	}
	return &Watcher{
		cfg: cfg, backoff: backoff.New(retryInitial, retryMax, cfg.Clock), kick: make(chan struct{}, 1),
		desired: map[string]time.Time{}, actual: map[string]registration{}, busy: map[string]bool{}, failedAt: map[string]time.Time{},
	}
}

// Run watches until ctx ends. It fails only when the directory cannot be
// created or watched.
func (w *Watcher) Run(ctx context.Context) error {
	if err := os.MkdirAll(w.cfg.Dir, 0o750); err != nil {
		return fmt.Errorf("plugin registration directory %s: %w", w.cfg.Dir, err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.cfg.Dir, err)
	}
	klog.V(2).InfoS("Plugin Watcher Start", "path", w.cfg.Dir)
	if err := w.traverse(fsw, w.cfg.Dir); err != nil {
		fsw.Close()
		return err
	}
	go func() {
		defer fsw.Close()
		ticker := w.cfg.Clock.NewTicker(w.cfg.Period)
		defer ticker.Stop()
		w.reconcile(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-fsw.Events:
				w.handleEvent(fsw, ev)
				w.reconcile(ctx)
			case err := <-fsw.Errors:
				klog.ErrorS(err, "Plugin registration directory watch error", "path", w.cfg.Dir)
			case <-ticker.C():
				w.reconcile(ctx)
			case <-w.kick:
				w.reconcile(ctx)
			}
		}
	}()
	return nil
}

// traverse watches dir and its subdirectories and records the sockets in
// them, as upstream's plugin watcher walks the directory at start.
func (w *Watcher) traverse(fsw *fsnotify.Watcher, dir string) error {
	if err := fsw.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			klog.ErrorS(err, "Error accessing path", "path", path)
			return nil
		}
		switch {
		case path == dir:
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
		case d.IsDir():
			if err := fsw.Add(path); err != nil {
				klog.ErrorS(err, "Cannot watch plugin directory", "path", path)
			}
		case d.Type()&fs.ModeSocket != 0:
			w.addSocket(path)
		}
		return nil
	})
}

func (w *Watcher) handleEvent(fsw *fsnotify.Watcher, ev fsnotify.Event) {
	switch {
	case ev.Has(fsnotify.Create):
		if strings.HasPrefix(filepath.Base(ev.Name), ".") {
			return
		}
		fi, err := os.Lstat(ev.Name)
		if err != nil {
			return // already gone again
		}
		switch {
		case fi.IsDir():
			if err := w.traverse(fsw, ev.Name); err != nil {
				klog.ErrorS(err, "Cannot watch plugin directory", "path", ev.Name)
			}
		case fi.Mode()&fs.ModeSocket != 0:
			w.addSocket(ev.Name)
		default:
			klog.V(5).InfoS("Ignoring non socket file", "path", ev.Name)
		}
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		w.mu.Lock()
		for path := range w.desired {
			if path == ev.Name || strings.HasPrefix(path, ev.Name+string(filepath.Separator)) {
				klog.V(2).InfoS("Removing socket path from desired state cache", "path", path)
				delete(w.desired, path)
			}
		}
		w.mu.Unlock()
	}
}

func (w *Watcher) addSocket(path string) {
	klog.V(2).InfoS("Adding socket path or updating timestamp to desired state cache", "path", path)
	w.mu.Lock()
	w.desired[path] = w.cfg.Clock.Now()
	w.backoff.Reset(path)
	delete(w.failedAt, path)
	w.mu.Unlock()
}

// reconcile de-registers what went away and starts the registrations due.
func (w *Watcher) reconcile(ctx context.Context) {
	w.mu.Lock()
	actual := make(map[string]time.Time, len(w.actual))
	for path, r := range w.actual {
		actual[path] = r.created
	}
	desired := make(map[string]time.Time, len(w.desired))
	for path, t := range w.desired {
		if !w.busy[path] {
			desired[path] = t
		}
	}
	for path := range w.busy {
		delete(actual, path) // decided when the running registration ends
	}
	plan := Reconcile(desired, actual)
	var gone []registration
	for _, path := range plan.Unregister {
		gone = append(gone, w.actual[path])
		delete(w.actual, path)
	}
	var start []string
	for _, path := range plan.Register {
		if last, failed := w.failedAt[path]; failed && backoff.Remaining(w.backoff, path, last) > 0 {
			continue
		}
		w.busy[path] = true
		start = append(start, path)
	}
	w.mu.Unlock()
	for _, r := range gone {
		klog.InfoS("Deregistering plugin", "plugin", r.name, "endpoint", r.endpoint)
		r.handler.DeRegisterPlugin(r.name, r.endpoint)
	}
	for _, path := range start {
		created := desired[path]
		go func() {
			r, err := w.register(ctx, path, created)
			w.mu.Lock()
			delete(w.busy, path)
			if err != nil {
				now := w.cfg.Clock.Now()
				w.backoff.Next(path, now)
				w.failedAt[path] = now
				klog.ErrorS(err, "Plugin registration failed, will retry", "path", path, "after", w.backoff.Get(path))
			} else {
				w.backoff.Reset(path)
				delete(w.failedAt, path)
				w.actual[path] = r
			}
			w.mu.Unlock()
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}()
	}
}

// register runs the registration handshake with the plugin at path.
func (w *Watcher) register(ctx context.Context, path string, created time.Time) (registration, error) {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return registration{}, fmt.Errorf("RegisterPlugin error -- dial failed at socket %s, err: %w", path, err)
	}
	defer conn.Close()
	client := registerapi.NewRegistrationClient(conn)
	ictx, cancel := context.WithTimeout(ctx, infoTimeout)
	info, err := client.GetInfo(ictx, &registerapi.InfoRequest{})
	cancel()
	if err != nil {
		return registration{}, fmt.Errorf("RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket %s, err: %w", path, err)
	}
	handler, ok := w.cfg.Handlers[info.Type]
	if !ok {
		msg := fmt.Sprintf("RegisterPlugin error -- no handler registered for plugin type: %s at socket %s", info.Type, path)
		return registration{}, notify(ctx, client, false, msg)
	}
	endpoint := info.Endpoint
	if endpoint == "" {
		endpoint = path
	}
	if err := handler.ValidatePlugin(info.Name, endpoint, info.SupportedVersions); err != nil {
		return registration{}, notify(ctx, client, false, fmt.Sprintf("RegisterPlugin error -- plugin validation failed with err: %v", err))
	}
	klog.InfoS("Registering plugin", "plugin", info.Name, "type", info.Type, "endpoint", endpoint, "versions", info.SupportedVersions)
	if err := handler.RegisterPlugin(info.Name, endpoint, info.SupportedVersions, nil); err != nil {
		return registration{}, notify(ctx, client, false, fmt.Sprintf("RegisterPlugin error -- plugin registration failed with err: %v", err))
	}
	r := registration{created: created, name: info.Name, endpoint: endpoint, handler: handler}
	if err := notify(ctx, client, true, ""); err != nil {
		// Registered on our side all the same: the plugin may retry.
		klog.ErrorS(err, "Cannot tell the plugin it is registered", "plugin", info.Name, "path", path)
	}
	return r, nil
}

// notify sends the registration status; with a message it returns that
// message as the error (joined with the call's own failure).
func notify(ctx context.Context, client registerapi.RegistrationClient, registered bool, msg string) error {
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	_, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: registered, Error: msg})
	switch {
	case err != nil && msg != "":
		return fmt.Errorf("%s: %w", msg, err)
	case err != nil:
		return err
	case msg != "":
		return errors.New(msg)
	}
	return nil
}

// Registered lists the registered plugins' names by socket path.
func (w *Watcher) Registered() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.actual))
	for path, r := range w.actual {
		out[path] = r.name
	}
	return out
}

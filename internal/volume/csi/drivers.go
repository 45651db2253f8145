package csi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/volume/pluginwatcher"
)

// registerTimeout bounds NodeGetInfo at registration (upstream's csiTimeout).
const registerTimeout = 2 * time.Minute

// ErrDriverNotRegistered wraps the error of an operation on a driver that
// has not registered (or went away).
var ErrDriverNotRegistered = errors.New("not found in the list of registered CSI drivers")

type driver struct {
	name, endpoint string
	version        *utilversion.Version
	conn           *grpc.ClientConn
	node           csipb.NodeClient
}

// Drivers holds the registered CSI drivers and one connection to each.
type Drivers struct {
	mu sync.RWMutex
	m  map[string]*driver
}

// NewDrivers returns an empty registry.
func NewDrivers() *Drivers { return &Drivers{m: map[string]*driver{}} }

// node returns the Node service client of a registered driver.
func (d *Drivers) node(name string) (csipb.NodeClient, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	dr, ok := d.m[name]
	if !ok {
		return nil, fmt.Errorf("driver name %s %w", name, ErrDriverNotRegistered)
	}
	return dr.node, nil
}

// Registered reports whether a driver of that name is registered.
func (d *Drivers) Registered(name string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.m[name]
	return ok
}

// Names lists the registered drivers.
func (d *Drivers) Names() []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]string, 0, len(d.m))
	for n := range d.m {
		out = append(out, n)
	}
	return out
}

func (d *Drivers) get(name string) (*driver, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	dr, ok := d.m[name]
	return dr, ok
}

// set registers dr, closing the connection of the driver it replaces.
func (d *Drivers) set(dr *driver) {
	d.mu.Lock()
	old := d.m[dr.name]
	d.m[dr.name] = dr
	d.mu.Unlock()
	if old != nil && old.conn != dr.conn {
		old.conn.Close()
	}
}

// remove drops the driver when it is still registered at endpoint (empty:
// any endpoint) and reports whether it did.
func (d *Drivers) remove(name, endpoint string) bool {
	d.mu.Lock()
	dr, ok := d.m[name]
	if ok && (endpoint == "" || dr.endpoint == endpoint) {
		delete(d.m, name)
	} else {
		ok = false
	}
	d.mu.Unlock()
	if ok {
		dr.conn.Close()
	}
	return ok
}

// dial connects to a driver's endpoint: a socket path, or unix://path.
func dial(endpoint string) (*grpc.ClientConn, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	return grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// NodeInfoInstaller records a driver's node information in the API: the
// CSINode object and the Node's annotation and topology labels (nil in
// standalone mode).
type NodeInfoInstaller interface {
	InstallDriver(ctx context.Context, driver, nodeID string, maxVolumes int64, topology map[string]string) error
	UninstallDriver(ctx context.Context, driver string) error
}

// Registrar is the plugin watcher's handler for CSIPlugin sockets, as
// upstream's csi RegistrationHandler.
type Registrar struct {
	Drivers  *Drivers
	NodeInfo NodeInfoInstaller // nil in standalone mode
}

var _ pluginwatcher.Handler = (*Registrar)(nil)

// validateVersions returns the highest 1.x version the driver supports;
// another driver of the same name must not support a higher one.
func (r *Registrar) validateVersions(caller, name string, versions []string) (*utilversion.Version, error) {
	if len(versions) == 0 {
		return nil, fmt.Errorf("%s: %s for CSI driver %q failed. Plugin returned an empty list for supported versions", PluginName, caller, name)
	}
	v, err := utilversion.HighestSupportedVersion(versions)
	if err != nil {
		return nil, fmt.Errorf("%s: %s for CSI driver %q failed. None of the versions specified %q are supported. err=%v", PluginName, caller, name, versions, err)
	}
	if old, ok := r.Drivers.get(name); ok && !old.version.LessThan(v) {
		return nil, fmt.Errorf("%s: %s for CSI driver %q failed. Another driver with the same name is already registered with a higher supported version: %q", PluginName, caller, name, old.version)
	}
	return v, nil
}

// ValidatePlugin checks the driver's CSI versions.
func (r *Registrar) ValidatePlugin(name, endpoint string, versions []string) error {
	klog.InfoS("Trying to validate a new CSI Driver", "name", name, "endpoint", endpoint, "versions", strings.Join(versions, ","))
	if _, err := r.validateVersions("ValidatePlugin", name, versions); err != nil {
		return fmt.Errorf("validation failed for CSI Driver %s at endpoint %s: %w", name, endpoint, err)
	}
	return nil
}

// RegisterPlugin connects to the driver, asks NodeGetInfo and records the
// node information; on failure the driver is not registered.
func (r *Registrar) RegisterPlugin(name, endpoint string, versions []string, timeout *time.Duration) error {
	klog.InfoS("Register new plugin", "name", name, "endpoint", endpoint)
	v, err := r.validateVersions("RegisterPlugin", name, versions)
	if err != nil {
		return err
	}
	conn, err := dial(endpoint)
	if err != nil {
		return fmt.Errorf("connect to CSI driver %s at %s: %w", name, endpoint, err)
	}
	dr := &driver{name: name, endpoint: endpoint, version: v, conn: conn, node: csipb.NewNodeClient(conn)}
	r.Drivers.set(dr)
	to := registerTimeout
	if timeout != nil {
		to = *timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), to)
	defer cancel()
	info, err := dr.node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
	if err == nil && info.GetNodeId() == "" {
		err = errors.New("error adding CSI driver node info: driverNodeID must not be empty")
	}
	if err == nil && r.NodeInfo != nil {
		var topology map[string]string
		if t := info.GetAccessibleTopology(); t != nil {
			topology = t.GetSegments()
		}
		err = r.NodeInfo.InstallDriver(ctx, name, info.GetNodeId(), info.GetMaxVolumesPerNode(), topology)
	}
	if err != nil {
		r.unregister(name, endpoint)
		return err
	}
	klog.InfoS("Registered CSI driver", "name", name, "endpoint", endpoint, "nodeID", info.GetNodeId())
	return nil
}

// DeRegisterPlugin forgets the driver when its socket went away.
func (r *Registrar) DeRegisterPlugin(name, endpoint string) {
	klog.InfoS("registrationHandler.DeRegisterPlugin request for plugin", "name", name, "endpoint", endpoint)
	r.unregister(name, endpoint)
}

func (r *Registrar) unregister(name, endpoint string) {
	if !r.Drivers.remove(name, endpoint) {
		return // replaced by a registration at another endpoint
	}
	if r.NodeInfo == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	if err := r.NodeInfo.UninstallDriver(ctx, name); err != nil {
		klog.ErrorS(err, "Error uninstalling CSI driver", "name", name)
	}
}

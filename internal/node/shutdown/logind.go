package shutdown

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// Logind is what the manager needs of systemd-logind (and, to reload it,
// of systemd), over the system bus.
type Logind interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec.
	InhibitDelayMax() (time.Duration, error)
	// Inhibit takes a "shutdown" delay inhibitor lock: logind waits for
	// its release (at most InhibitDelayMax) before shutting down.
	Inhibit() (Lock, error)
	// PrepareForShutdown delivers logind's PrepareForShutdown signals:
	// true when a shutdown starts, false when it was cancelled. The
	// channel closes when the bus connection is lost.
	PrepareForShutdown() (<-chan bool, error)
	// OverrideInhibitDelay writes a logind drop-in raising
	// InhibitDelayMaxSec; ReloadConf makes logind read it.
	OverrideInhibitDelay(d time.Duration) error
	ReloadConf() error
	Close() error
}

// Lock is a held inhibitor lock (a file descriptor logind handed out).
type Lock interface{ Release() error }

const (
	logindService   = "org.freedesktop.login1"
	logindObject    = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
	// DefaultLogindConfDir is where the InhibitDelayMaxSec drop-in goes.
	DefaultLogindConfDir = "/etc/systemd/logind.conf.d"
	kubeletLogindConf    = "99-kubelet.conf"
)

// dbusLogind is Logind on a system bus connection.
type dbusLogind struct {
	conn    *dbus.Conn
	confDir string
}

var _ Logind = (*dbusLogind)(nil)

// ConnectLogind connects to the system bus ($DBUS_SYSTEM_BUS_ADDRESS, else
// /run/dbus/system_bus_socket); confDir is where OverrideInhibitDelay
// writes ("" means DefaultLogindConfDir).
func ConnectLogind(confDir string) (Logind, error) {
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, err
	}
	if confDir == "" {
		confDir = DefaultLogindConfDir
	}
	return &dbusLogind{conn: conn, confDir: confDir}, nil
}

func (l *dbusLogind) InhibitDelayMax() (time.Duration, error) {
	v, err := l.conn.Object(logindService, logindObject).GetProperty(logindInterface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("failed reading InhibitDelayMaxUSec property from logind: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, errors.New("InhibitDelayMaxUSec from logind is not a uint64 as expected")
	}
	return time.Duration(usec) * time.Microsecond, nil
}

func (l *dbusLogind) Inhibit() (Lock, error) {
	call := l.conn.Object(logindService, logindObject).Call(logindInterface+".Inhibit", 0,
		"shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay")
	if call.Err != nil {
		return nil, fmt.Errorf("failed creating systemd inhibitor: %w", call.Err)
	}
	var fd dbus.UnixFD
	if err := call.Store(&fd); err != nil {
		return nil, fmt.Errorf("failed storing inhibit lock file descriptor: %w", err)
	}
	return fdLock(fd), nil
}

// fdLock is released by closing the descriptor.
type fdLock int

func (f fdLock) Release() error {
	if err := unix.Close(int(f)); err != nil {
		return fmt.Errorf("unable to close systemd inhibitor lock: %w", err)
	}
	return nil
}

func (l *dbusLogind) PrepareForShutdown() (<-chan bool, error) {
	if err := l.conn.AddMatchSignal(dbus.WithMatchInterface(logindInterface), dbus.WithMatchMember("PrepareForShutdown"),
		dbus.WithMatchObjectPath(logindObject)); err != nil {
		return nil, err
	}
	signals := make(chan *dbus.Signal, 1)
	l.conn.Signal(signals)
	out := make(chan bool, 1)
	go func() {
		defer close(out)
		for s := range signals {
			if s == nil || s.Name != logindInterface+".PrepareForShutdown" {
				continue
			}
			if len(s.Body) == 0 {
				klog.ErrorS(nil, "Failed obtaining shutdown event, PrepareForShutdown event was empty")
				continue
			}
			active, ok := s.Body[0].(bool)
			if !ok {
				klog.ErrorS(nil, "Failed obtaining shutdown event, PrepareForShutdown event was not bool type as expected")
				continue
			}
			out <- active
		}
	}()
	return out, nil
}

func (l *dbusLogind) OverrideInhibitDelay(d time.Duration) error {
	if err := os.MkdirAll(l.confDir, 0o755); err != nil {
		return fmt.Errorf("failed creating %v directory: %w", l.confDir, err)
	}
	conf := fmt.Sprintf("# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=%.0f\n", d.Seconds())
	path := filepath.Join(l.confDir, kubeletLogindConf)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("failed writing logind shutdown inhibit override file %v: %w", path, err)
	}
	return nil
}

// ReloadConf sends logind SIGHUP through systemd, as upstream.
func (l *dbusLogind) ReloadConf() error {
	call := l.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").Call(
		"org.freedesktop.systemd1.Manager.KillUnit", 0, "systemd-logind.service", "all", int32(unix.SIGHUP))
	if call.Err != nil {
		return fmt.Errorf("unable to reload logind conf: %w", call.Err)
	}
	return nil
}

func (l *dbusLogind) Close() error { return l.conn.Close() }

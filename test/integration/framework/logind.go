package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
	"github.com/seed-kubelet/kubelet/test/systemdstandin"
	"golang.org/x/sys/unix"
)

// PrivateSystemBus starts Debian's dbus-daemon as a system bus of its own
// (systemdstandin.StartBus) and returns its address, for
// DBUS_SYSTEM_BUS_ADDRESS. It stops with the test.
func PrivateSystemBus(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dbus-")
	if err != nil {
		t.Fatal(err)
	}
	bus, err := systemdstandin.StartBus(dir)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bus.Close()
		os.RemoveAll(dir)
	})
	return bus.Address
}

// Logind is a minimal stand-in for systemd-logind on a private bus (the
// machine cannot really shut down): org.freedesktop.login1.Manager's
// Inhibit (a real file descriptor whose release it sees), the
// InhibitDelayMaxUSec property and the PrepareForShutdown signal, and
// systemd's KillUnit(systemd-logind.service, SIGHUP), which makes it read
// InhibitDelayMaxSec from ConfDir again, as logind does.
type Logind struct {
	t       testing.TB
	conn    *dbus.Conn
	props   *prop.Properties
	confDir string

	mu    sync.Mutex
	locks []*inhibitor
}

type inhibitor struct {
	who, what, why, mode string
	taken, released      time.Time
}

// NewLogind connects to the bus at address, takes the names
// org.freedesktop.login1 and org.freedesktop.systemd1, and starts with
// InhibitDelayMaxSec delay. confDir is the logind.conf.d a reload reads.
func NewLogind(t testing.TB, address string, delay time.Duration, confDir string) *Logind {
	t.Helper()
	conn, err := dbus.Connect(address)
	if err != nil {
		t.Fatalf("connect to the private bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	l := &Logind{t: t, conn: conn, confDir: confDir}
	const path = dbus.ObjectPath("/org/freedesktop/login1")
	if err := conn.Export(l, path, "org.freedesktop.login1.Manager"); err != nil {
		t.Fatal(err)
	}
	l.props, err = prop.Export(conn, path, prop.Map{"org.freedesktop.login1.Manager": {
		"InhibitDelayMaxUSec": {Value: uint64(delay / time.Microsecond), Writable: false, Emit: prop.EmitTrue},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Export(systemdStandIn{l}, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"org.freedesktop.login1", "org.freedesktop.systemd1"} {
		reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
		if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			t.Fatalf("own %s on the private bus: %v %v", name, reply, err)
		}
	}
	return l
}

// Inhibit is logind's method: it hands out the write end of a pipe and
// watches the read end, which sees EOF once the holder closes its copy.
func (l *Logind) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, dbus.MakeFailedError(err)
	}
	in := &inhibitor{who: who, what: what, why: why, mode: mode, taken: time.Now()}
	l.mu.Lock()
	l.locks = append(l.locks, in)
	l.mu.Unlock()
	go func() {
		// Our copy of the write end goes once the reply (which carries
		// it) is out; the holder's copy is then the only one.
		time.Sleep(200 * time.Millisecond)
		unix.Close(p[1])
	}()
	go func() {
		buf := make([]byte, 1)
		for {
			n, err := unix.Read(p[0], buf)
			if n == 0 || (err != nil && err != unix.EINTR) {
				break
			}
		}
		unix.Close(p[0])
		l.mu.Lock()
		in.released = time.Now()
		l.mu.Unlock()
	}()
	return dbus.UnixFD(p[1]), nil
}

// systemdStandIn is org.freedesktop.systemd1.Manager's KillUnit.
type systemdStandIn struct{ l *Logind }

func (s systemdStandIn) KillUnit(unit, who string, signal int32) *dbus.Error {
	if unit != "systemd-logind.service" || signal != int32(unix.SIGHUP) {
		return dbus.MakeFailedError(fmt.Errorf("unexpected KillUnit(%s, %s, %d)", unit, who, signal))
	}
	if d, ok := readInhibitDelay(s.l.confDir); ok {
		s.l.SetInhibitDelay(d)
	}
	return nil
}

var inhibitDelayLine = regexp.MustCompile(`(?m)^InhibitDelayMaxSec=(\d+)$`)

// readInhibitDelay reads the last InhibitDelayMaxSec of the drop-ins.
func readInhibitDelay(dir string) (time.Duration, bool) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.conf"))
	var d time.Duration
	found := false
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, m := range inhibitDelayLine.FindAllStringSubmatch(string(data), -1) {
			secs, _ := strconv.Atoi(m[1])
			d, found = time.Duration(secs)*time.Second, true
		}
	}
	return d, found
}

// SetInhibitDelay changes InhibitDelayMaxUSec.
func (l *Logind) SetInhibitDelay(d time.Duration) {
	l.props.SetMust("org.freedesktop.login1.Manager", "InhibitDelayMaxUSec", uint64(d/time.Microsecond))
}

// InhibitDelay is InhibitDelayMaxUSec.
func (l *Logind) InhibitDelay() time.Duration {
	v, err := l.props.Get("org.freedesktop.login1.Manager", "InhibitDelayMaxUSec")
	if err != nil {
		l.t.Fatal(err)
	}
	return time.Duration(v.Value().(uint64)) * time.Microsecond
}

// PrepareForShutdown emits the signal logind sends before a shutdown
// (true) or when one is cancelled (false).
func (l *Logind) PrepareForShutdown(active bool) {
	l.t.Helper()
	if err := l.conn.Emit("/org/freedesktop/login1", "org.freedesktop.login1.Manager.PrepareForShutdown", active); err != nil {
		l.t.Fatal(err)
	}
}

// InhibitorLock is one Inhibit call as logind saw it.
type InhibitorLock struct {
	What, Who, Why, Mode string
	Taken, Released      time.Time
}

// Held reports whether the lock is still held.
func (i InhibitorLock) Held() bool { return i.Released.IsZero() }

// Locks lists the inhibitor locks handed out, oldest first.
func (l *Logind) Locks() []InhibitorLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]InhibitorLock, len(l.locks))
	for i, in := range l.locks {
		out[i] = InhibitorLock{What: in.what, Who: in.who, Why: in.why, Mode: in.mode, Taken: in.taken, Released: in.released}
	}
	return out
}

// Package systemdstandin is a small stand-in for systemd's D-Bus API, for
// tests on machines without systemd: a private dbus-daemon (Debian's) on a
// unix socket, and on it org.freedesktop.systemd1 with the Manager methods
// that cgroup managers call (libcontainer's, in the kubelet and in runc):
// StartTransientUnit, SetUnitProperties, StopUnit, ResetFailedUnit,
// AttachProcessesToUnit, and the Version property. It records every call
// with its properties, and acts on cgroup v1 as systemd would for slices
// and scopes: it creates their directories (parents first) in the
// hierarchies their accounting properties realise and in name=systemd,
// writes their resource properties into the cgroup files, moves a scope's
// PIDs in, and on stop kills what is left and removes the directories.
//
// It is not systemd: no unit files, dependencies, jobs queue or cgroup v2.
package systemdstandin

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/moby/sys/mountinfo"
)

const (
	busName     = "org.freedesktop.systemd1"
	managerPath = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIfc  = "org.freedesktop.systemd1.Manager"
	propsIfc    = "org.freedesktop.DBus.Properties"
)

// Bus is a private dbus-daemon.
type Bus struct {
	// Address is the bus's address, for DBUS_SYSTEM_BUS_ADDRESS.
	Address string
	cmd     *exec.Cmd
}

// busConfig lets everyone on the machine (root, in the tests) own names,
// call anyone and emit signals (logind's PrepareForShutdown): the bus is
// private to the test.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// StartBus starts dbus-daemon with its own configuration and a socket in
// dir, and waits until it listens. Stop it with Close.
func StartBus(dir string) (*Bus, error) {
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		return nil, fmt.Errorf("dbus-daemon (Debian package dbus-daemon) is needed: %w", err)
	}
	sock := filepath.Join(dir, "system_bus_socket")
	cfg := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(busConfig, sock)), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(daemon, "--config-file="+cfg, "--nofork", "--nopidfile", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// Its complaints (it cannot raise its fd limit without
	// CAP_SYS_RESOURCE) go to a log beside the socket.
	logf, err := os.Create(filepath.Join(dir, "dbus-daemon.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dbus-daemon: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("dbus-daemon did not print its address: %w", err)
	}
	return &Bus{Address: strings.TrimSpace(line), cmd: cmd}, nil
}

// Close stops the daemon.
func (b *Bus) Close() {
	b.cmd.Process.Signal(syscall.SIGTERM)
	b.cmd.Wait()
}

// Call is one method call the stand-in received.
type Call struct {
	Method string
	Unit   string
	// Props are the unit properties passed (StartTransientUnit,
	// SetUnitProperties), by name, as plain Go values.
	Props map[string]any
}

// unit is a started transient unit.
type unit struct {
	name  string
	path  string // cgroup path below each hierarchy's mount point
	props map[string]any
	dirs  []string // realised cgroup directories
}

// Systemd is the stand-in, connected to a bus.
type Systemd struct {
	conn    *dbus.Conn
	mounts  map[string]string
	version string

	mu    sync.Mutex
	calls []Call
	units map[string]*unit
	jobs  uint32
}

// Config configures the stand-in.
type Config struct {
	// Address is the bus to serve on (Bus.Address).
	Address string
	// Mounts maps each cgroup v1 hierarchy to its mount point, by
	// controller ("cpu", "memory", ...) and "name=systemd" (HostV1Mounts).
	Mounts map[string]string
	// Version is what the Version property says (default "252").
	Version string
}

// Start connects to the bus, takes org.freedesktop.systemd1 and serves the
// Manager on /org/freedesktop/systemd1.
func Start(cfg Config) (*Systemd, error) {
	conn, err := dbus.Connect(cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Address, err)
	}
	s := &Systemd{conn: conn, mounts: cfg.Mounts, version: cfg.Version, units: map[string]*unit{}}
	if s.version == "" {
		s.version = "252"
	}
	if err := conn.Export(manager{s}, managerPath, managerIfc); err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.Export(managerProps{s}, managerPath, propsIfc); err != nil {
		conn.Close()
		return nil, err
	}
	reply, err := conn.RequestName(busName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		conn.Close()
		return nil, fmt.Errorf("request %s: reply %v, %v", busName, reply, err)
	}
	return s, nil
}

// Close leaves the bus.
func (s *Systemd) Close() { s.conn.Close() }

// Calls returns the calls received so far, in order.
func (s *Systemd) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Units lists the units started and not stopped, sorted.
func (s *Systemd) Units() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.units {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CreateSlice starts a slice as an administrator would have (e.g. the
// slice a kubelet's cgroupRoot names), without recording a call.
func (s *Systemd) CreateSlice(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.start(name, map[string]any{"MemoryAccounting": true, "CPUAccounting": true, "TasksAccounting": true, "BlockIOAccounting": true})
	return err
}

// StopSlice stops a slice CreateSlice started (and what is below it).
func (s *Systemd) StopSlice(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stop(name)
}

// SlicePath is systemd's cgroup path of a slice:
// "a-b-c.slice" is "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" is "/".
func SlicePath(name string) (string, error) {
	base, ok := strings.CutSuffix(name, ".slice")
	if !ok || base == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("invalid slice name %q", name)
	}
	if base == "-" {
		return "/", nil
	}
	p, prefix := "", ""
	for _, c := range strings.Split(base, "-") {
		if c == "" {
			return "", fmt.Errorf("invalid slice name %q", name)
		}
		p += "/" + prefix + c + ".slice"
		prefix += c + "-"
	}
	return p, nil
}

func dbusError(name, format string, args ...any) *dbus.Error {
	return dbus.NewError(name, []any{fmt.Sprintf(format, args...)})
}

// property is one (sv) of a unit's properties.
type property struct {
	Name  string
	Value dbus.Variant
}

type auxUnit struct {
	Name  string
	Props []property
}

func plain(props []property) map[string]any {
	out := make(map[string]any, len(props))
	for _, p := range props {
		out[p.Name] = p.Value.Value()
	}
	return out
}

// manager holds the exported org.freedesktop.systemd1.Manager methods.
type manager struct{ s *Systemd }

func (m manager) StartTransientUnit(name, mode string, props []property, aux []auxUnit) (dbus.ObjectPath, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p := plain(props)
	s.calls = append(s.calls, Call{Method: "StartTransientUnit", Unit: name, Props: p})
	if _, ok := s.units[name]; ok {
		return "", dbusError("org.freedesktop.systemd1.UnitExists", "Unit %s already exists.", name)
	}
	if _, err := s.start(name, p); err != nil {
		return "", dbusError("org.freedesktop.DBus.Error.InvalidArgs", "%v", err)
	}
	return s.jobDone(name), nil
}

func (m manager) SetUnitProperties(name string, runtime bool, props []property) *dbus.Error {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p := plain(props)
	s.calls = append(s.calls, Call{Method: "SetUnitProperties", Unit: name, Props: p})
	u, ok := s.units[name]
	if !ok {
		return dbusError("org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name)
	}
	for k, v := range p {
		u.props[k] = v
	}
	if err := s.apply(u, p); err != nil {
		return dbusError("org.freedesktop.DBus.Error.Failed", "%v", err)
	}
	return nil
}

func (m manager) StopUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Method: "StopUnit", Unit: name})
	if _, ok := s.units[name]; !ok {
		return "", dbusError("org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name)
	}
	if err := s.stop(name); err != nil {
		return "", dbusError("org.freedesktop.DBus.Error.Failed", "%v", err)
	}
	return s.jobDone(name), nil
}

func (m manager) ResetFailedUnit(name string) *dbus.Error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	m.s.calls = append(m.s.calls, Call{Method: "ResetFailedUnit", Unit: name})
	return nil
}

func (m manager) AttachProcessesToUnit(name, subcgroup string, pids []uint32) *dbus.Error {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Method: "AttachProcessesToUnit", Unit: name})
	u, ok := s.units[name]
	if !ok {
		return dbusError("org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name)
	}
	for _, dir := range u.dirs {
		if err := movePIDs(filepath.Join(dir, subcgroup), pids); err != nil {
			return dbusError("org.freedesktop.DBus.Error.Failed", "%v", err)
		}
	}
	return nil
}

// jobDone returns a new job's path and announces, as systemd does once a
// job finished, JobRemoved with result "done". The signal goes out after
// the method's reply: clients register the job from the reply.
func (s *Systemd) jobDone(unitName string) dbus.ObjectPath {
	s.jobs++
	id := s.jobs
	job := dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", id))
	go func() {
		s.conn.Emit(managerPath, managerIfc+".JobRemoved", id, job, unitName, "done")
	}()
	return job
}

// managerProps serves org.freedesktop.DBus.Properties on the manager.
type managerProps struct{ s *Systemd }

func (p managerProps) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	if iface == managerIfc && name == "Version" {
		return dbus.MakeVariant(p.s.version), nil
	}
	return dbus.Variant{}, dbusError("org.freedesktop.DBus.Error.UnknownProperty", "Unknown property %s.%s", iface, name)
}

func (p managerProps) GetAll(iface string) (map[string]dbus.Variant, *dbus.Error) {
	return map[string]dbus.Variant{"Version": dbus.MakeVariant(p.s.version)}, nil
}

func (p managerProps) Set(iface, name string, v dbus.Variant) *dbus.Error {
	return dbusError("org.freedesktop.DBus.Error.PropertyReadOnly", "%s is read-only", name)
}

// unitProps serves org.freedesktop.DBus.Properties on a unit's object.
type unitProps struct {
	s    *Systemd
	name string
}

func (p unitProps) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	u, ok := p.s.units[p.name]
	if !ok {
		return dbus.Variant{}, dbusError("org.freedesktop.DBus.Error.UnknownObject", "Unit %s not loaded.", p.name)
	}
	if v, ok := u.props[name]; ok {
		return dbus.MakeVariant(v), nil
	}
	switch name {
	case "DevicePolicy":
		return dbus.MakeVariant("auto"), nil
	case "ControlGroup":
		return dbus.MakeVariant(u.path), nil
	}
	return dbus.Variant{}, dbusError("org.freedesktop.DBus.Error.UnknownProperty", "Unknown property %s.%s", iface, name)
}

func (p unitProps) Set(iface, name string, v dbus.Variant) *dbus.Error {
	return dbusError("org.freedesktop.DBus.Error.PropertyReadOnly", "%s is read-only", name)
}

// unitObjectPath is systemd's object path of a unit (go-systemd's unitPath).
func unitObjectPath(name string) dbus.ObjectPath {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9' && i > 0) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return dbus.ObjectPath("/org/freedesktop/systemd1/unit/" + b.String())
}

// realised are the v1 hierarchies systemd puts a unit's cgroup in, given
// its accounting properties (name=systemd always).
func (s *Systemd) realised(props map[string]any) []string {
	out := []string{"name=systemd"}
	on := func(p string) bool { v, _ := props[p].(bool); return v }
	if on("CPUAccounting") {
		out = append(out, "cpu", "cpuacct")
	}
	if on("MemoryAccounting") {
		out = append(out, "memory")
	}
	if on("TasksAccounting") {
		out = append(out, "pids")
	}
	if on("BlockIOAccounting") {
		out = append(out, "blkio")
	}
	if _, ok := props["DevicePolicy"]; ok {
		out = append(out, "devices")
	}
	return out
}

// start creates a unit; s.mu is held.
func (s *Systemd) start(name string, props map[string]any) (*unit, error) {
	var cgPath string
	switch {
	case strings.HasSuffix(name, ".slice"):
		p, err := SlicePath(name)
		if err != nil {
			return nil, err
		}
		cgPath = p
	case strings.HasSuffix(name, ".scope"):
		slice, _ := props["Slice"].(string)
		if slice == "" {
			slice = "system.slice"
		}
		p, err := SlicePath(slice)
		if err != nil {
			return nil, err
		}
		cgPath = path.Join(p, name)
	default:
		return nil, fmt.Errorf("only slices and scopes can be transient here, not %q", name)
	}
	u := &unit{name: name, path: cgPath, props: map[string]any{}}
	for k, v := range props {
		u.props[k] = v
	}
	seen := map[string]bool{}
	for _, h := range s.realised(props) {
		mp, ok := s.mounts[h]
		if !ok || seen[mp] {
			continue
		}
		seen[mp] = true
		dir := filepath.Join(mp, cgPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		u.dirs = append(u.dirs, dir)
	}
	if err := s.apply(u, props); err != nil {
		return nil, err
	}
	if pids, ok := props["PIDs"].([]uint32); ok {
		for _, dir := range u.dirs {
			if err := movePIDs(dir, pids); err != nil {
				return nil, err
			}
		}
	}
	s.units[name] = u
	s.conn.Export(unitProps{s, name}, unitObjectPath(name), propsIfc)
	return u, nil
}

// apply writes resource properties into the unit's cgroup files as
// systemd does on cgroup v1.
func (s *Systemd) apply(u *unit, props map[string]any) error {
	write := func(controller, file, value string) error {
		mp, ok := s.mounts[controller]
		if !ok {
			return nil
		}
		dir := filepath.Join(mp, u.path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
			return fmt.Errorf("unit %s: %s=%s: %w", u.name, file, value, err)
		}
		return nil
	}
	limit := func(v uint64) string {
		if v == math.MaxUint64 {
			return "-1"
		}
		return strconv.FormatUint(v, 10)
	}
	var errs []error
	if v, ok := props["CPUShares"].(uint64); ok {
		errs = append(errs, write("cpu", "cpu.shares", strconv.FormatUint(v, 10)))
	}
	if v, ok := props["CPUQuotaPeriodUSec"].(uint64); ok {
		errs = append(errs, write("cpu", "cpu.cfs_period_us", strconv.FormatUint(v, 10)))
	}
	if v, ok := props["CPUQuotaPerSecUSec"].(uint64); ok {
		period := uint64(100000)
		if p, ok := u.props["CPUQuotaPeriodUSec"].(uint64); ok && p > 0 {
			period = p
		}
		quota := "-1"
		if v != math.MaxUint64 {
			quota = strconv.FormatUint(v*period/1000000, 10)
		}
		errs = append(errs, write("cpu", "cpu.cfs_quota_us", quota))
	}
	if v, ok := props["MemoryLimit"].(uint64); ok {
		errs = append(errs, write("memory", "memory.limit_in_bytes", limit(v)))
	}
	if v, ok := props["TasksMax"].(uint64); ok {
		value := "max"
		if v != math.MaxUint64 {
			value = strconv.FormatUint(v, 10)
		}
		errs = append(errs, write("pids", "pids.max", value))
	}
	return errors.Join(errs...)
}

// stop stops a unit and every unit inside it (a slice's children): their
// processes are killed and their directories removed, deepest first. s.mu
// is held.
func (s *Systemd) stop(name string) error {
	u, ok := s.units[name]
	if !ok {
		return nil
	}
	var errs []error
	for other, ou := range s.units {
		if other != name && strings.HasPrefix(ou.path, u.path+"/") {
			errs = append(errs, s.stop(other))
		}
	}
	for _, mp := range uniq(s.mounts) {
		errs = append(errs, removeTree(filepath.Join(mp, u.path)))
	}
	delete(s.units, name)
	s.conn.Export(nil, unitObjectPath(name), propsIfc)
	return errors.Join(errs...)
}

func uniq(m map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range m {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// removeTree kills the processes of a cgroup directory tree and removes it
// bottom-up; a missing directory is fine.
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for i := 0; i < 50; i++ {
		if data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond) // the kernel frees a cgroup once its killed tasks are reaped
	}
	return fmt.Errorf("remove %s: still busy", dir)
}

func movePIDs(dir string, pids []uint32) error {
	for _, pid := range pids {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.FormatUint(uint64(pid), 10)), 0o644); err != nil {
			return fmt.Errorf("move %d into %s: %w", pid, dir, err)
		}
	}
	return nil
}

// HostV1Mounts finds this machine's cgroup v1 hierarchies: each
// controller's mount point, and name=systemd's.
func HostV1Mounts() (map[string]string, error) {
	infos, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range infos {
		for _, opt := range strings.Split(m.VFSOptions, ",") {
			switch {
			case opt == "rw" || opt == "ro" || opt == "xattr" || opt == "noprefix" || opt == "clone_children" || strings.HasPrefix(opt, "release_agent="):
			default:
				if _, ok := out[opt]; !ok {
					out[opt] = m.Mountpoint
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy mounted")
	}
	return out, nil
}

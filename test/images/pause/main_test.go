package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWaitReapsOnSIGCHLDAndStopsOnTermination(t *testing.T) {
	for _, stop := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		sigs := make(chan os.Signal, 4)
		sigs <- syscall.SIGCHLD
		sigs <- syscall.SIGCHLD
		sigs <- stop
		sigs <- syscall.SIGCHLD // after the stop signal: never read
		reaps := 0
		if got := wait(sigs, func() { reaps++ }); got != stop {
			t.Errorf("wait returned %v, want %v", got, stop)
		}
		if reaps != 2 || len(sigs) != 1 {
			t.Errorf("stop=%v: reaped %d times with %d signals left, want 2 and 1", stop, reaps, len(sigs))
		}
	}
}

func TestReapZombiesCollectsExitedChildren(t *testing.T) {
	var pids []int
	for range 3 {
		cmd := exec.Command("/bin/true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	// Let them exit (zombies until someone waits).
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for !isZombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("child %d did not exit", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if n := reapZombies(); n != len(pids) {
		t.Errorf("reapZombies() = %d, want %d", n, len(pids))
	}
	for _, pid := range pids {
		if _, err := os.Stat(filepath.Join("/proc", itoa(pid))); !os.IsNotExist(err) {
			t.Errorf("child %d still in /proc after reaping (err %v)", pid, err)
		}
	}
	if n := reapZombies(); n != 0 {
		t.Errorf("second reapZombies() = %d, want 0", n)
	}
}

// TestBinaryExitsZeroOnSIGTERM runs the real program and signals it.
func TestBinaryExitsZeroOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Signal only once pause says its handler is installed: the Go runtime
	// catches every signal from the start (SigCgt says nothing), and a
	// SIGTERM before signal.Notify would end it by the signal.
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "waiting for SIGINT or SIGTERM") {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("pause never said it was waiting for signals")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pause exited with %v, want status 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pause did not exit on SIGTERM")
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] == 'Z'
		}
	}
	return false
}

func itoa(i int) string { return strconv.Itoa(i) }

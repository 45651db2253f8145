package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// wait blocks until SIGINT or SIGTERM arrives on sigs, calling reap for every
// SIGCHLD, and returns the signal that ended it.
func wait(sigs <-chan os.Signal, reap func()) os.Signal {
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		return s
	}
	return nil
}

// reapZombies collects every exited child without blocking and returns how
// many it reaped.
func reapZombies() int {
	n := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return n
		}
		n++
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (seed-kubelet test image)")
		return
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// Said only once the handlers are ours: before that, the Go runtime's own
	// handler would end the process by the signal (exit status non-zero).
	fmt.Fprintln(os.Stderr, "pause: waiting for SIGINT or SIGTERM")
	s := wait(sigs, func() { reapZombies() })
	fmt.Fprintf(os.Stderr, "pause: shutting down on %v\n", s)
}

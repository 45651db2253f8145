package stats

import "golang.org/x/sys/unix"

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

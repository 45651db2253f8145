package app

import "golang.org/x/sys/unix"

type syscallSysinfo struct{ total int64 }

func sysinfo(out *syscallSysinfo) error {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return err
	}
	out.total = int64(si.Totalram) * int64(si.Unit)
	return nil
}

package eviction

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// memcgNotifier is a cgroup v1 memory threshold notification: the kernel
// signals an eventfd whenever memory.usage_in_bytes of the cgroup crosses
// the threshold (either way), so memory pressure is noticed between two
// monitoring intervals rather than by the kernel OOM killer.
type memcgNotifier struct {
	efd, epfd int
	usage     *os.File
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once
}

// newMemoryNotifier registers threshold (bytes of usage) on the memory
// cgroup dir and calls notify on each crossing until closed or ctx ends.
func newMemoryNotifier(ctx context.Context, dir string, threshold int64, notify func()) (memoryNotifier, error) {
	if dir == "" {
		return nil, errors.New("no memory cgroup directory")
	}
	usage, err := os.Open(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return nil, fmt.Errorf("memory cgroup notifications need cgroup v1: %w", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		usage.Close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	n := &memcgNotifier{efd: efd, epfd: -1, usage: usage, stop: make(chan struct{}), done: make(chan struct{})}
	control := fmt.Sprintf("%d %d %d", efd, usage.Fd(), threshold)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(control), 0); err != nil {
		n.release()
		return nil, fmt.Errorf("register memory threshold: %w", err)
	}
	if n.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		n.release()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if err := unix.EpollCtl(n.epfd, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}); err != nil {
		n.release()
		return nil, fmt.Errorf("epoll add: %w", err)
	}
	go n.loop(ctx, notify)
	return n, nil
}

func (n *memcgNotifier) loop(ctx context.Context, notify func()) {
	defer close(n.done)
	events := make([]unix.EpollEvent, 1)
	buf := make([]byte, 8)
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.stop:
			return
		default:
		}
		// A short timeout lets Close and ctx end the loop.
		c, err := unix.EpollWait(n.epfd, events, 500)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			klog.ErrorS(err, "Eviction manager: memory threshold notifier stopped")
			return
		}
		if c == 0 {
			continue
		}
		if _, err := unix.Read(n.efd, buf); err != nil && !errors.Is(err, unix.EAGAIN) {
			klog.ErrorS(err, "Eviction manager: reading the memory threshold eventfd")
			return
		}
		notify()
	}
}

// Close stops the loop and unregisters the threshold (closing the eventfd
// removes the kernel's registration).
func (n *memcgNotifier) Close() error {
	n.once.Do(func() {
		close(n.stop)
		<-n.done
		n.release()
	})
	return nil
}

func (n *memcgNotifier) release() {
	if n.epfd >= 0 {
		unix.Close(n.epfd)
	}
	unix.Close(n.efd)
	n.usage.Close()
}

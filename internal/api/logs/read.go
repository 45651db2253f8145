package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Options selects what ReadLogs writes (the v1.PodLogOptions fields that
// matter to a reader, with sinceSeconds already turned into SinceTime).
type Options struct {
	// Follow keeps reading as the file grows, until the container stops
	// running, ctx ends, or a write fails.
	Follow bool
	// TailLines starts at the last TailLines lines; nil means all.
	TailLines *int64
	// SinceTime drops lines logged before it; nil means all.
	SinceTime *time.Time
	// Timestamps prefixes each line with its timestamp.
	Timestamps bool
	// LimitBytes stops after writing that many bytes; nil means no limit.
	LimitBytes *int64
	// Previous picks the previous instance of the container. It is used
	// when choosing the log file; ReadLogs itself ignores it.
	Previous bool
}

const (
	// pollPeriod is how long a follower waits without a file event before
	// looking at the container's state and the file again.
	pollPeriod = time.Second
	// maxWatchErrors is how many watch errors a follower tolerates.
	maxWatchErrors = 5
	// ctxCheckLines is how often a long read checks for cancellation.
	ctxCheckLines = 4096
)

// ReadLogs writes the CRI-format log file at path to stdout and stderr (by
// the stream of each line; a nil writer drops that stream), as opts says.
// When following, containerID and rs tell when the container stopped
// running, after which the rest of the file is written and ReadLogs returns;
// with either missing it follows until ctx ends. A rotated log file (renamed
// and re-created by the runtime, or truncated in place) is followed at path.
func ReadLogs(ctx context.Context, path, containerID string, opts Options, rs runtimeapi.RuntimeServiceClient, stdout, stderr io.Writer) error {
	return readLogs(ctx, clock.RealClock{}, path, containerID, opts, rs, stdout, stderr)
}

func readLogs(ctx context.Context, clk clock.Clock, path, containerID string, opts Options, rs runtimeapi.RuntimeServiceClient, stdout, stderr io.Writer) error {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("resolve log path %q: %w", path, err)
	}
	f, err := os.Open(resolved)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	fl := &follower{
		clk: clk, poll: pollPeriod, rs: rs, containerID: containerID,
		path: path, f: f, sink: newSink(stdout, stderr, opts),
	}
	defer fl.close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat log file: %w", err)
	}
	start := int64(0)
	if opts.TailLines != nil {
		if start, err = tailOffset(f, fi.Size(), *opts.TailLines); err != nil {
			return fmt.Errorf("find the last %d lines of %q: %w", *opts.TailLines, resolved, err)
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("seek log file %q: %w", resolved, err)
	}
	if !opts.Follow {
		// Without follow, the file as it was when opened.
		return fl.copy(ctx, io.LimitReader(f, fi.Size()-start))
	}
	fl.offset = start
	fl.br = bufio.NewReader(f)
	return fl.follow(ctx)
}

// follower reads one container's log file, following it when asked.
type follower struct {
	clk         clock.Clock
	poll        time.Duration
	rs          runtimeapi.RuntimeServiceClient
	containerID string
	path        string // as given: re-resolved after a rotation
	sink        *sink

	f       *os.File
	br      *bufio.Reader
	offset  int64  // bytes of f consumed from br
	pending []byte // an unterminated line, until the rest of it is written

	watcher    *fsnotify.Watcher
	watchedDir string
	watching   bool // set up (or given up on, polling instead)
	watchErrs  int
	rotated    bool // path names a new file: switch once f is drained
}

func (fl *follower) close() {
	if fl.watcher != nil {
		fl.watcher.Close()
	}
	fl.f.Close()
}

// copy writes every line of r; a last line without a newline too.
func (fl *follower) copy(ctx context.Context, r io.Reader) error {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		if n%ctxCheckLines == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if done, werr := fl.emit(line); done || werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read log file: %w", err)
		}
	}
}

// emit parses and writes one line; done is true once the byte limit is hit.
func (fl *follower) emit(line []byte) (done bool, err error) {
	rec, err := parseRecord(line)
	if err != nil {
		klog.V(4).InfoS("Skipping malformed log line", "path", fl.path, "err", err)
		return false, nil
	}
	if err := fl.sink.write(rec); err != nil {
		if errors.Is(err, errLimitReached) {
			return true, nil
		}
		return true, err
	}
	return false, nil
}

func (fl *follower) follow(ctx context.Context) error {
	exited := false
	for n := 1; ; n++ {
		if n%ctxCheckLines == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, err := fl.br.ReadBytes('\n')
		fl.offset += int64(len(line))
		if err == nil {
			if len(fl.pending) > 0 {
				line = append(fl.pending, line...)
				fl.pending = nil
			}
			if done, werr := fl.emit(line); done || werr != nil {
				return werr
			}
			continue
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("read log file: %w", err)
		}
		// At the end of the file: keep an unterminated line for later.
		fl.pending = append(fl.pending, line...)
		fl.sink.flush()
		switch {
		case fl.rotated:
			if err := fl.reopen(); err != nil {
				return err
			}
			continue
		case exited:
			return fl.emitPending()
		case !fl.watching:
			fl.watch()
			continue // read again: the file may have grown before the watch
		}
		running, err := fl.running(ctx)
		if err != nil {
			return err
		}
		if !running {
			// Read what the container wrote before stopping, then end.
			exited = true
			continue
		}
		if err := fl.wait(ctx); err != nil {
			return err
		}
		fl.checkRotation()
	}
}

func (fl *follower) emitPending() error {
	if len(fl.pending) == 0 {
		return nil
	}
	line := fl.pending
	fl.pending = nil
	_, err := fl.emit(line)
	return err
}

// watch watches the log file's directory, which sees both writes to the
// file and a rotation re-creating it. Without a watch, polling remains.
func (fl *follower) watch() {
	fl.watching = true
	w, err := fsnotify.NewWatcher()
	if err != nil {
		klog.InfoS("Cannot watch log file, polling it instead", "path", fl.path, "err", err)
		return
	}
	dir := filepath.Dir(fl.f.Name())
	if err := w.Add(dir); err != nil {
		w.Close()
		klog.InfoS("Cannot watch log directory, polling it instead", "dir", dir, "err", err)
		return
	}
	fl.watcher, fl.watchedDir = w, dir
}

// running reports whether the container is still running. A container the
// runtime no longer knows has stopped.
func (fl *follower) running(ctx context.Context) (bool, error) {
	if fl.rs == nil || fl.containerID == "" {
		return true, nil
	}
	resp, err := fl.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: fl.containerID})
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return false, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("get status of container %s: %w", fl.containerID, err)
	}
	if st := resp.GetStatus().GetState(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		klog.V(5).InfoS("Container not running, finishing its log", "containerID", fl.containerID, "state", st)
		return false, nil
	}
	return true, nil
}

// wait blocks until the log directory changes, the poll period passes, or
// ctx ends.
func (fl *follower) wait(ctx context.Context) error {
	t := fl.clk.NewTimer(fl.poll)
	defer t.Stop()
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
	)
	if fl.watcher != nil {
		events, errs = fl.watcher.Events, fl.watcher.Errors
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			return nil
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			fl.watchErrs++
			klog.ErrorS(err, "Log file watch error", "path", fl.path, "errors", fl.watchErrs)
			if fl.watchErrs > maxWatchErrors {
				return fmt.Errorf("watch log file %q: %w", fl.path, err)
			}
		case <-t.C():
			return nil
		}
	}
}

// checkRotation notes a new file at path (switched to once the current one
// is drained) and restarts a file truncated in place.
func (fl *follower) checkRotation() {
	now, err := os.Stat(fl.path)
	if err != nil {
		return // renamed away, its successor not created yet
	}
	cur, err := fl.f.Stat()
	if err != nil {
		return
	}
	if !os.SameFile(now, cur) {
		fl.rotated = true
		return
	}
	if now.Size() < fl.offset {
		klog.V(2).InfoS("Log file truncated, reading it from the start", "path", fl.path)
		if _, err := fl.f.Seek(0, io.SeekStart); err == nil {
			fl.br.Reset(fl.f)
			fl.offset, fl.pending = 0, nil
		}
	}
}

// reopen switches to the file now at path, the old one having been read to
// its end.
func (fl *follower) reopen() error {
	fl.rotated = false
	resolved, err := filepath.EvalSymlinks(fl.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("resolve log path %q: %w", fl.path, err)
	}
	nf, err := os.Open(resolved)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("open log file: %w", err)
	}
	if err := fl.emitPending(); err != nil {
		nf.Close()
		return err
	}
	fl.f.Close()
	fl.f, fl.offset = nf, 0
	fl.br.Reset(nf)
	klog.V(2).InfoS("Following the re-created log file", "path", resolved)
	if dir := filepath.Dir(resolved); fl.watcher != nil && dir != fl.watchedDir {
		_ = fl.watcher.Remove(fl.watchedDir)
		if err := fl.watcher.Add(dir); err != nil {
			klog.InfoS("Cannot watch log directory, polling it instead", "dir", dir, "err", err)
		}
		fl.watchedDir = dir
	}
	return nil
}

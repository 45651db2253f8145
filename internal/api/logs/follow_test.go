package logs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
)

// followEnv is a log file being written while ReadLogs follows it.
type followEnv struct {
	t    *testing.T
	path string
	rt   *fakeRuntime
	out  *syncBuffer
}

func (e *followEnv) write(s string) { appendFile(e.t, e.path, s) }
func (e *followEnv) exit()          { e.rt.setState("c1", exited) }
func (e *followEnv) waitOut(want string) {
	waitFor(e.t, "output "+want, func() bool { return e.out.String() == want })
}

// waitPolls waits until the follower has asked the runtime n more times
// about the container, so it has read to the end of the file meanwhile.
func (e *followEnv) waitPolls(n int) {
	from := e.rt.hits()
	waitFor(e.t, "runtime polls", func() bool { return e.rt.hits() >= from+n })
}

func TestReadLogsFollow(t *testing.T) {
	tests := []struct {
		name    string
		initial string
		opts    Options
		script  func(e *followEnv)
		want    string
		wantErr string
	}{
		{
			name:    "streams new lines until the container exits",
			initial: crilog("0 stdout F one", "1 stderr F two"),
			script: func(e *followEnv) {
				e.waitOut("one\ntwo\n")
				e.write(crilog("2 stdout F three"))
				e.waitOut("one\ntwo\nthree\n")
				e.write(crilog("3 stdout P fo", "4 stdout F ur"))
				e.waitOut("one\ntwo\nthree\nfour\n")
				e.write(crilog("5 stdout F last words"))
				e.exit()
			},
			want: "one\ntwo\nthree\nfour\nlast words\n",
		},
		{
			name:    "an unterminated line waits for its end",
			initial: crilog("0 stdout F one"),
			script: func(e *followEnv) {
				e.waitOut("one\n")
				e.write("2026-03-01T10:00:01Z stdout F hal")
				e.waitPolls(2)
				if got := e.out.String(); got != "one\n" {
					e.t.Errorf("half a line was written: %q", got)
				}
				e.write("f\n")
				e.waitOut("one\nhalf\n")
				e.exit()
			},
			want: "one\nhalf\n",
		},
		{
			name:    "tail then follow",
			initial: crilog("0 stdout F a", "1 stdout F b", "2 stdout F c"),
			opts:    Options{TailLines: ptr[int64](1), Timestamps: true},
			script: func(e *followEnv) {
				e.waitOut("2026-03-01T10:00:02.000000000Z c\n")
				e.write(crilog("3 stdout F d"))
				e.exit()
			},
			want: "2026-03-01T10:00:02.000000000Z c\n2026-03-01T10:00:03.000000000Z d\n",
		},
		{
			name:    "byte limit ends the stream",
			initial: crilog("0 stdout F 12345"),
			opts:    Options{LimitBytes: ptr[int64](9)},
			script: func(e *followEnv) {
				e.waitOut("12345\n")
				e.write(crilog("1 stdout F 67890"))
			},
			want: "12345\n678",
		},
		{
			name:    "log rotated by rename, runtime re-creates the file",
			initial: crilog("0 stdout F before"),
			script: func(e *followEnv) {
				e.waitOut("before\n")
				e.write(crilog("1 stdout F written just before rotation"))
				if err := os.Rename(e.path, e.path+".20260301-100002"); err != nil {
					e.t.Error(err)
				}
				e.waitPolls(1)
				e.write(crilog("2 stdout F after"))
				e.waitOut("before\nwritten just before rotation\nafter\n")
				e.write(crilog("3 stdout F more"))
				e.exit()
			},
			want: "before\nwritten just before rotation\nafter\nmore\n",
		},
		{
			name:    "log truncated in place",
			initial: crilog("0 stdout F a fairly long first line", "1 stdout F and a second one"),
			script: func(e *followEnv) {
				e.waitOut("a fairly long first line\nand a second one\n")
				if err := os.Truncate(e.path, 0); err != nil {
					e.t.Error(err)
				}
				e.waitPolls(1)
				e.write(crilog("2 stdout F x"))
				e.waitOut("a fairly long first line\nand a second one\nx\n")
				e.exit()
			},
			want: "a fairly long first line\nand a second one\nx\n",
		},
		{
			name:    "container removed from the runtime",
			initial: crilog("0 stdout F gone"),
			script: func(e *followEnv) {
				e.waitOut("gone\n")
				e.rt.remove("c1")
			},
			want: "gone\n",
		},
		{
			name:    "runtime error ends with it",
			initial: crilog("0 stdout F a"),
			script: func(e *followEnv) {
				e.waitOut("a\n")
				e.rt.mu.Lock()
				e.rt.statusErr["c1"] = status.Error(codes.Unavailable, "runtime down")
				e.rt.mu.Unlock()
			},
			want:    "a\n",
			wantErr: "runtime down",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "c", "0.log")
			writeFile(t, path, tc.initial)
			rt := newFakeRuntime()
			rt.add("uid", "c", "c1", 0, 1, running, 0, path)
			e := &followEnv{t: t, path: path, rt: rt, out: &syncBuffer{}}
			opts := tc.opts
			opts.Follow = true
			done := make(chan error, 1)
			go func() { done <- ReadLogs(t.Context(), path, "c1", opts, rt, e.out, e.out) }()
			tc.script(e)
			select {
			case err := <-done:
				if tc.wantErr == "" && err != nil {
					t.Fatalf("ReadLogs: %v", err)
				}
				if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("ReadLogs error = %v, want %q", err, tc.wantErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("follow did not end; output %q", e.out.String())
			}
			if got := e.out.String(); got != tc.want {
				t.Errorf("output %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadLogsFollowEnds(t *testing.T) {
	tests := []struct {
		name        string
		state       runtimeapi.ContainerState
		containerID string
		cancel      bool
		wantErr     error
	}{
		{name: "exited container: at the end of its file", state: exited, containerID: "c1"},
		{name: "running container: when the context ends", state: running, containerID: "c1", cancel: true, wantErr: context.Canceled},
		{name: "no container ID: when the context ends", state: exited, cancel: true, wantErr: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			writeFile(t, path, crilog("0 stdout F only"))
			rt := newFakeRuntime()
			rt.add("uid", "c", "c1", 0, 1, tc.state, 0, path)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			out := &syncBuffer{}
			done := make(chan error, 1)
			go func() {
				done <- ReadLogs(ctx, path, tc.containerID, Options{Follow: true}, rt, out, out)
			}()
			waitFor(t, "first line", func() bool { return out.String() == "only\n" })
			if tc.cancel {
				cancel()
			}
			select {
			case err := <-done:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ReadLogs error = %v, want %v", err, tc.wantErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("follow did not end")
			}
		})
	}
}

// TestFollowPollsOnTheClock checks that without file events the follower
// looks at the container again each poll period of the injected clock.
func TestFollowPollsOnTheClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, crilog("0 stdout F quiet"))
	rt := newFakeRuntime()
	rt.add("uid", "c", "c1", 0, 1, running, 0, path)
	clk := testingclock.NewFakeClock(t0)
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- readLogs(t.Context(), clock.Clock(clk), path, "c1", Options{Follow: true}, rt, out, out)
	}()
	waitFor(t, "the follower to wait", clk.HasWaiters)
	if got := out.String(); got != "quiet\n" {
		t.Fatalf("output %q", got)
	}
	rt.setState("c1", exited)
	select {
	case <-done:
		t.Fatal("follow ended before the poll period passed")
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(pollPeriod)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ReadLogs: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end after a poll period")
	}
}

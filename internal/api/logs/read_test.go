package logs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadLogs(t *testing.T) {
	mixed := crilog(
		"0 stdout F one",
		"1 stderr F err one",
		"2 stdout P tw",
		"3 stdout P o-",
		"4 stdout F two",
		"5 stderr F err two",
		"6 stdout F three",
	)
	tests := []struct {
		name       string
		content    string
		opts       Options
		split      bool // separate stdout and stderr buffers
		dropStdout bool
		wantOut    string
		wantErr    string // stderr when split
	}{
		{
			name:    "all lines, both streams interleaved",
			content: mixed,
			wantOut: "one\nerr one\ntwo-two\nerr two\nthree\n",
		},
		{
			name:    "streams to their own writers",
			content: mixed,
			split:   true,
			wantOut: "one\ntwo-two\nthree\n",
			wantErr: "err one\nerr two\n",
		},
		{
			name:       "a nil writer drops its stream",
			content:    mixed,
			split:      true,
			dropStdout: true,
			wantErr:    "err one\nerr two\n",
		},
		{
			name:    "partial lines joined",
			content: crilog("0 stdout P a", "0 stdout P b", "0 stdout F c", "1 stdout F d"),
			wantOut: "abc\nd\n",
		},
		{
			name:    "malformed lines skipped",
			content: crilog("0 stdout F ok") + "not a cri line\n" + "\n" + "2026-03-01T10:00:00Z stdin F bad\n" + crilog("1 stderr F fine"),
			wantOut: "ok\nfine\n",
		},
		{
			name:    "timestamps once per line",
			content: crilog("0 stdout F one", "1 stdout P tw", "2 stdout F o"),
			opts:    Options{Timestamps: true},
			wantOut: "2026-03-01T10:00:00.000000000Z one\n2026-03-01T10:00:01.000000000Z two\n",
		},
		{
			name:    "timestamps keep the file's offset and nine digits",
			content: "2026-03-01T12:00:00.5+02:00 stdout F x\n",
			opts:    Options{Timestamps: true},
			wantOut: "2026-03-01T12:00:00.500000000+02:00 x\n",
		},
		{
			name:    "timestamps per stream around interleaved partials",
			content: crilog("0 stdout P a", "1 stderr F E", "2 stdout F b"),
			opts:    Options{Timestamps: true},
			wantOut: "2026-03-01T10:00:00.000000000Z a2026-03-01T10:00:01.000000000Z E\nb\n",
		},
		{
			name:    "since drops older lines",
			content: mixed,
			opts:    Options{SinceTime: ptr(t0.Add(4 * time.Second))},
			wantOut: "err two\nthree\n",
		},
		{
			name:    "since is inclusive",
			content: mixed,
			opts:    Options{SinceTime: ptr(t0.Add(5 * time.Second))},
			wantOut: "err two\nthree\n",
		},
		{
			name:    "since judges a line by its first part",
			content: mixed,
			opts:    Options{SinceTime: ptr(t0.Add(3 * time.Second))},
			wantOut: "err two\nthree\n",
		},
		{
			name:    "since after everything",
			content: mixed,
			opts:    Options{SinceTime: ptr(t0.Add(time.Hour))},
		},
		{
			name:    "limit cuts mid-line",
			content: mixed,
			opts:    Options{LimitBytes: ptr[int64](10)},
			wantOut: "one\nerr on",
		},
		{
			name:    "limit on a line boundary",
			content: mixed,
			opts:    Options{LimitBytes: ptr[int64](4)},
			wantOut: "one\n",
		},
		{
			name:    "limit counts timestamps",
			content: mixed,
			opts:    Options{LimitBytes: ptr[int64](35), Timestamps: true},
			wantOut: "2026-03-01T10:00:00.000000000Z one\n",
		},
		{
			name:    "limit larger than the log",
			content: mixed,
			opts:    Options{LimitBytes: ptr[int64](1 << 20)},
			wantOut: "one\nerr one\ntwo-two\nerr two\nthree\n",
		},
		{
			name:    "tail counts whole lines, not records",
			content: mixed,
			opts:    Options{TailLines: ptr[int64](3)},
			wantOut: "two-two\nerr two\nthree\n",
		},
		{
			name:    "tail zero",
			content: mixed,
			opts:    Options{TailLines: ptr[int64](0)},
		},
		{
			name:    "tail beyond the start",
			content: mixed,
			opts:    Options{TailLines: ptr[int64](100)},
			wantOut: "one\nerr one\ntwo-two\nerr two\nthree\n",
		},
		{
			name:    "tail counts a line still being written",
			content: crilog("0 stdout F a", "1 stdout F b", "2 stdout P c"),
			opts:    Options{TailLines: ptr[int64](2)},
			wantOut: "b\nc",
		},
		{
			name:    "tail with since and timestamps",
			content: mixed,
			opts:    Options{TailLines: ptr[int64](3), SinceTime: ptr(t0.Add(5 * time.Second)), Timestamps: true},
			wantOut: "2026-03-01T10:00:05.000000000Z err two\n2026-03-01T10:00:06.000000000Z three\n",
		},
		{
			name:    "unterminated last line is still written",
			content: crilog("0 stdout F a") + "2026-03-01T10:00:01Z stdout F b",
			wantOut: "a\nb",
		},
		{
			name: "empty file",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			writeFile(t, path, tc.content)
			var out, errOut bytes.Buffer
			var stdout, stderr io.Writer = &out, &out
			if tc.split {
				stderr = &errOut
			}
			if tc.dropStdout {
				stdout = nil
			}
			if err := ReadLogs(context.Background(), path, "", tc.opts, nil, stdout, stderr); err != nil {
				t.Fatalf("ReadLogs: %v", err)
			}
			if out.String() != tc.wantOut {
				t.Errorf("stdout = %q, want %q", out.String(), tc.wantOut)
			}
			if errOut.String() != tc.wantErr {
				t.Errorf("stderr = %q, want %q", errOut.String(), tc.wantErr)
			}
		})
	}
}

func TestReadLogsFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "pods", "0.log")
	writeFile(t, target, crilog("0 stdout F via link"))
	link := filepath.Join(dir, "link.log")
	if err := osSymlink(target, link); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), link, "", Options{}, nil, &out, &out); err != nil {
		t.Fatalf("ReadLogs: %v", err)
	}
	if out.String() != "via link\n" {
		t.Errorf("got %q", out.String())
	}
}

func TestReadLogsErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeFile(t, path, crilog("0 stdout F a", "1 stdout F b"))
	big := filepath.Join(dir, "big.log")
	writeFile(t, big, strings.Repeat(crilog("0 stdout F line"), 3*ctxCheckLines))
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		path string
		out  io.Writer
		want string
	}{
		{name: "missing file", path: filepath.Join(dir, "missing.log"), out: io.Discard, want: "resolve log path"},
		{name: "directory", path: dir, out: io.Discard, want: "read log file"},
		{name: "failing writer", path: path, out: failingWriter{}, want: "write stdout: disk full"},
		{name: "short writer", path: path, out: shortWriter{}, want: io.ErrShortWrite.Error()},
		{name: "canceled during a long read", ctx: canceled, path: big, out: io.Discard, want: context.Canceled.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			err := ReadLogs(ctx, tc.path, "", Options{}, nil, tc.out, tc.out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadLogs error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

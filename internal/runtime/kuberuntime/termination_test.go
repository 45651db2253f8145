package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func criLog(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("2025-01-02T03:04:05.000000000Z " + l + "\n")
	}
	return b.String()
}

func TestLogTail(t *testing.T) {
	cases := []struct {
		name     string
		data     string
		lines    int
		maxBytes int
		want     string
	}{
		{name: "full and partial lines", data: criLog("stdout P hel", "stdout F lo", "stderr F oops"), lines: 80, maxBytes: 2048, want: "hello\noops\n"},
		{name: "empty content", data: criLog("stdout F"), lines: 80, maxBytes: 2048, want: "\n"},
		{name: "last lines only", data: criLog("stdout F 1", "stdout F 2", "stdout F 3"), lines: 2, maxBytes: 2048, want: "2\n3\n"},
		{name: "last bytes only", data: criLog("stdout F abcdef"), lines: 80, maxBytes: 3, want: "ef\n"},
		{name: "garbage skipped", data: "junk\n" + criLog("stdout F ok"), lines: 80, maxBytes: 2048, want: "ok\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(LogTail([]byte(tc.data), tc.lines, tc.maxBytes)); got != tc.want {
				t.Fatalf("LogTail = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var many []string
	for i := 0; i < 100; i++ {
		many = append(many, fmt.Sprintf("stdout F line %03d", i))
	}
	logPath := write("0.log", criLog(many...))
	empty := write("empty", "")
	written := write("written", "bye")
	long := write("long", strings.Repeat("x", 5000)+"END")
	mounts := func(host string) []*runtimeapi.Mount {
		return []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: host}}
	}
	logTail := string(LogTail([]byte(criLog(many...)), 80, 2048))
	cases := []struct {
		name   string
		status *runtimeapi.ContainerStatus
		policy v1.TerminationMessagePolicy
		want   string
	}{
		{name: "file written", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(written), LogPath: logPath}, policy: v1.TerminationMessageFallbackToLogsOnError, want: "bye"},
		{name: "File policy never reads logs", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(empty), LogPath: logPath}, policy: v1.TerminationMessageReadFile, want: ""},
		{name: "fallback on failure", status: &runtimeapi.ContainerStatus{ExitCode: 2, Mounts: mounts(empty), LogPath: logPath}, policy: v1.TerminationMessageFallbackToLogsOnError, want: logTail},
		{name: "no fallback on success", status: &runtimeapi.ContainerStatus{ExitCode: 0, Mounts: mounts(empty), LogPath: logPath}, policy: v1.TerminationMessageFallbackToLogsOnError, want: ""},
		{name: "no fallback when it could not run", status: &runtimeapi.ContainerStatus{ExitCode: 128, Reason: "ContainerCannotRun", Mounts: mounts(empty), LogPath: logPath}, policy: v1.TerminationMessageFallbackToLogsOnError, want: ""},
		{name: "missing file falls back", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(filepath.Join(dir, "gone")), LogPath: logPath}, policy: v1.TerminationMessageFallbackToLogsOnError, want: logTail},
		{name: "file read from its end", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(long)}, policy: v1.TerminationMessageReadFile, want: strings.Repeat("x", 4093) + "END"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := terminationMessage(tc.status, "/dev/termination-log", tc.policy); got != tc.want {
				t.Fatalf("terminationMessage = %q, want %q", got, tc.want)
			}
		})
	}
	// The last 80 of the 100 lines.
	if !strings.HasPrefix(logTail, "line 020\n") || !strings.HasSuffix(logTail, "line 099\n") {
		t.Fatalf("log tail is %d bytes: %q", len(logTail), logTail)
	}
}

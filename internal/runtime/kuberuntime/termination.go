package kuberuntime

import (
	"bytes"
	"fmt"
	"io"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Bounds of a termination message, as upstream: the message file is read
// up to 4096 bytes (its end); the fallback to logs takes the last 80 log
// lines, of which the last 2048 bytes.
const (
	maxTerminationMessage    = 4096
	maxTerminationLogLines   = 80
	maxTerminationLogBytes   = 2048
	maxTerminationLogScanned = 2 << 20 // never read more than this of a log tail
)

// terminationMessage is the message of an exited container: the file at
// its terminationMessagePath, else, with FallbackToLogsOnError and a failed
// container that ran, the tail of its log.
func terminationMessage(s *runtimeapi.ContainerStatus, path string, policy v1.TerminationMessagePolicy) string {
	fallback := policy == v1.TerminationMessageFallbackToLogsOnError && s.ExitCode != 0 && s.Reason != "ContainerCannotRun"
	msg, checkLogs := readTerminationMessage(s.Mounts, path, fallback)
	if checkLogs {
		return lastLogLines(s.LogPath)
	}
	return msg
}

// readTerminationMessage reads the host side of the termination-log mount;
// it reports whether the logs should be used instead (fallback asked and
// no message written).
func readTerminationMessage(mounts []*runtimeapi.Mount, containerPath string, fallback bool) (string, bool) {
	if containerPath == "" {
		return "", fallback
	}
	for _, mnt := range mounts {
		if mnt.ContainerPath != containerPath {
			continue
		}
		data, err := readTail(mnt.HostPath, maxTerminationMessage)
		if err != nil {
			if os.IsNotExist(err) {
				return "", fallback
			}
			return fmt.Sprintf("Error on reading termination log %s: %v", mnt.HostPath, err), false
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// readTail returns at most the last max bytes of the file at path.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	start := fi.Size() - max
	if start < 0 {
		start = 0
	}
	return io.ReadAll(io.NewSectionReader(f, start, fi.Size()-start))
}

// lastLogLines is the content of the last log lines of a CRI log file,
// cut to its last maxTerminationLogBytes.
func lastLogLines(path string) string {
	data, err := readTail(path, maxTerminationLogScanned)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return string(LogTail(data, maxTerminationLogLines, maxTerminationLogBytes))
}

// LogTail parses CRI log lines ("<time> <stream> <P|F> <content>") and
// returns the content of the last lines lines, of which the last maxBytes.
// A full line (F) ends with a newline, a partial one (P) does not; lines
// that do not parse are skipped. It is pure.
func LogTail(data []byte, lines, maxBytes int) []byte {
	raw := bytes.Split(data, []byte("\n"))
	if len(raw) > 0 && len(raw[len(raw)-1]) == 0 {
		raw = raw[:len(raw)-1]
	}
	if len(raw) > lines {
		raw = raw[len(raw)-lines:]
	}
	var out []byte
	for _, l := range raw {
		fields := bytes.SplitN(l, []byte(" "), 4)
		if len(fields) < 3 {
			continue
		}
		content := []byte{}
		if len(fields) == 4 {
			content = fields[3]
		}
		out = append(out, content...)
		if string(fields[2]) != "P" {
			out = append(out, '\n')
		}
	}
	if len(out) > maxBytes {
		out = out[len(out)-maxBytes:]
	}
	return out
}

package main

import (
	"bufio"
	"os"
	"regexp"
	"time"
)

// criCalls are when the runtime began and finished the three calls that
// start a pod, read from containerd's own log (info level logs each CRI
// call as it begins and as it returns). Zero when not found.
type criCalls struct {
	SandboxBegin, SandboxEnd time.Time
	CreateBegin, CreateEnd   time.Time
	StartBegin, StartEnd     time.Time
}

func (c *criCalls) complete() bool {
	return c != nil && !c.SandboxBegin.IsZero() && !c.SandboxEnd.IsZero() && !c.CreateBegin.IsZero() &&
		!c.CreateEnd.IsZero() && !c.StartBegin.IsZero() && !c.StartEnd.IsZero()
}

// containerd 1.6 and 2.x log lines, e.g.
//
//	time="…" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:p,Uid:…,} returns sandbox id \"S\""
//	time="…" level=info msg="CreateContainer within sandbox \"S\" for container &ContainerMetadata{Name:sleep,Attempt:0,}"
//	time="…" level=info msg="CreateContainer within sandbox \"S\" for &ContainerMetadata{…} returns container id \"C\""
//	time="…" level=info msg="StartContainer for \"C\""
//	time="…" level=info msg="StartContainer for \"C\" returns successfully"
var (
	reTime          = regexp.MustCompile(`^time="([^"]+)"`)
	reSandboxBegin  = regexp.MustCompile(`msg="RunPodSandbox for &PodSandboxMetadata\{Name:([^,]+),[^"]*\}"`)
	reSandboxEnd    = regexp.MustCompile(`msg="RunPodSandbox for &PodSandboxMetadata\{Name:([^,]+),.* returns sandbox id \\"([0-9a-f]+)\\""`)
	reCreateBegin   = regexp.MustCompile(`msg="CreateContainer within sandbox \\"([0-9a-f]+)\\" for container &ContainerMetadata`)
	reCreateEnd     = regexp.MustCompile(`msg="CreateContainer within sandbox \\"([0-9a-f]+)\\" for &ContainerMetadata.* returns container id \\"([0-9a-f]+)\\""`)
	reStartBegin    = regexp.MustCompile(`msg="StartContainer for \\"([0-9a-f]+)\\""`)
	reStartEnd      = regexp.MustCompile(`msg="StartContainer for \\"([0-9a-f]+)\\" returns successfully"`)
	reContainerdLog = regexp.MustCompile(`level=info msg="(RunPodSandbox|CreateContainer|StartContainer) `)
)

// readRuntimeLog indexes the start calls in a containerd log by pod name
// (the newest sandbox of each name wins). Lines before since are skipped.
func readRuntimeLog(path string, since time.Time) (map[string]*criCalls, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byPod := map[string]*criCalls{}
	podOfSandbox := map[string]string{}
	podOfContainer := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !reContainerdLog.MatchString(line) {
			continue
		}
		tm := reTime.FindStringSubmatch(line)
		if tm == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, tm[1])
		if err != nil || t.Before(since) {
			continue
		}
		if m := reSandboxEnd.FindStringSubmatch(line); m != nil {
			if c := byPod[m[1]]; c != nil {
				c.SandboxEnd = t
				podOfSandbox[m[2]] = m[1]
			}
		} else if m := reSandboxBegin.FindStringSubmatch(line); m != nil {
			byPod[m[1]] = &criCalls{SandboxBegin: t}
		} else if m := reCreateEnd.FindStringSubmatch(line); m != nil {
			if pod, ok := podOfSandbox[m[1]]; ok {
				byPod[pod].CreateEnd = t
				podOfContainer[m[2]] = pod
			}
		} else if m := reCreateBegin.FindStringSubmatch(line); m != nil {
			if pod, ok := podOfSandbox[m[1]]; ok {
				byPod[pod].CreateBegin = t
			}
		} else if m := reStartEnd.FindStringSubmatch(line); m != nil {
			if pod, ok := podOfContainer[m[1]]; ok {
				byPod[pod].StartEnd = t
			}
		} else if m := reStartBegin.FindStringSubmatch(line); m != nil {
			if pod, ok := podOfContainer[m[1]]; ok {
				byPod[pod].StartBegin = t
			}
		}
	}
	return byPod, sc.Err()
}

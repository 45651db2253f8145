package main

import (
	"strings"
	"testing"
)

const report = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4">
  <testsuite name="Kubernetes e2e suite" tests="4">
    <testcase name="[It] [sig-node] A works [NodeConformance] [sig-node, NodeConformance]" classname="Kubernetes e2e suite" status="passed" time="1.5"></testcase>
    <testcase name="[sig-node] B | breaks" classname="Kubernetes e2e suite" status="failed" time="3">
      <failure message="[FAILED] timed out&#xA;second line" type="failed">body</failure>
    </testcase>
    <testcase name="[sig-node] C skipped" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
    <testcase name="[sig-node] D slow" classname="Kubernetes e2e suite" status="timedout" time="900"><failure message="" type="timedout"></failure></testcase>
  </testsuite>
</testsuites>`

func TestParse(t *testing.T) {
	got, err := parse(strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]outcome{
		"[sig-node] A works [NodeConformance]": {Status: "passed", Seconds: 1.5},
		"[sig-node] B | breaks":                {Status: "failed", Message: "[FAILED] timed out", Seconds: 3},
		"[sig-node] C skipped":                 {Status: "skipped"},
		"[sig-node] D slow":                    {Status: "failed", Message: "timedout", Seconds: 900},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d cases, want %d: %+v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], w)
		}
	}
}

func TestTable(t *testing.T) {
	ours := map[string]outcome{"a": {Status: "passed"}, "b": {Status: "failed", Message: "boom"}, "c": {Status: "skipped"}}
	up := map[string]outcome{"a": {Status: "passed"}, "b": {Status: "passed"}}
	got := table([]string{"ours", "upstream"}, []map[string]outcome{ours, up})
	for _, line := range []string{
		"ours: 1 passed, 1 failed",
		"upstream: 2 passed, 0 failed",
		"| a | passed | passed |  |",
		"| b | failed | passed | ours: boom |",
	} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("table lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "| c |") {
		t.Errorf("spec skipped everywhere is listed:\n%s", got)
	}
}

func TestMerge(t *testing.T) {
	first := map[string]outcome{"a": {Status: "failed", Message: "x"}, "b": {Status: "passed"}, "c": {Status: "failed"}}
	rerun := map[string]outcome{"a": {Status: "passed"}, "b": {Status: "skipped"}, "d": {Status: "skipped"}}
	merge(first, rerun)
	want := map[string]string{"a": "passed", "b": "passed", "c": "failed", "d": "skipped"}
	for k, w := range want {
		if first[k].Status != w {
			t.Errorf("%s: %s, want %s", k, first[k].Status, w)
		}
	}
}

func TestFailed(t *testing.T) {
	ours := map[string]outcome{"b": {Status: "failed"}, "a": {Status: "passed"}}
	up := map[string]outcome{"a": {Status: "failed"}, "b": {Status: "failed"}, "c": {Status: "skipped"}}
	if got := failed([]map[string]outcome{ours, up}); got != "a\nb\n" {
		t.Errorf("failed = %q, want %q", got, "a\nb\n")
	}
}

package cgroups

import (
	"testing"
)

func TestParseOOMKill(t *testing.T) {
	tests := []struct {
		name   string
		record string
		want   OOMKill
		ok     bool
		system bool
	}{
		{
			name:   "container over its limit",
			record: "6,1234,5678,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/seed-n/kubepods/podu/abc,task_memcg=/seed-n/kubepods/podu/abc,task=tail,pid=4242,uid=0\n SUBSYSTEM=x",
			want:   OOMKill{Constraint: "CONSTRAINT_MEMCG", OOMCgroup: "/seed-n/kubepods/podu/abc", TaskCgroup: "/seed-n/kubepods/podu/abc", Process: "tail", PID: 4242},
			ok:     true,
		},
		{
			name:   "whole machine",
			record: "6,99,1,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/kubepods/besteffort/podx/c,task=stress,pid=77,uid=0",
			ok:     false, // older global_oom format without oom_memcg is not a cgroup record
		},
		{
			name:   "whole machine with oom_memcg root",
			record: "6,99,1,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/,task_memcg=/kubepods/besteffort/podx/c,task=stress,pid=77,uid=0",
			want:   OOMKill{Constraint: "CONSTRAINT_NONE", OOMCgroup: "/", TaskCgroup: "/kubepods/besteffort/podx/c", Process: "stress", PID: 77},
			ok:     true, system: true,
		},
		{name: "other kernel line", record: "6,1,1,-;cni0: port 1(veth) entered disabled state"},
		{name: "not a record", record: "garbage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, _ := KmsgMessage(tc.record)
			got, ok := ParseOOMKill(msg)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
			if ok && got.System() != tc.system {
				t.Errorf("System = %v", got.System())
			}
		})
	}
}

func TestOOMWatcherEvents(t *testing.T) {
	rec := &fakeRecorder{}
	w := &OOMWatcher{NodeName: "n1", Recorder: rec}
	w.Handle("6,1,1,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=a,mems_allowed=0,oom_memcg=/kubepods/poda/c,task_memcg=/kubepods/poda/c,task=tail,pid=5,uid=0")
	if len(rec.events) != 0 {
		t.Fatalf("a cgroup OOM made a node event: %v", rec.events)
	}
	w.Handle("6,2,1,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/,task_memcg=/kubepods/poda/c,task=hog,pid=6,uid=0")
	if !rec.has("Warning SystemOOM System OOM encountered, victim process: hog, pid: 6") {
		t.Fatalf("events %v", rec.events)
	}
	if got := SystemOOMMessage(OOMKill{}); got != "System OOM encountered" {
		t.Errorf("message without a victim: %q", got)
	}
}

package backoff

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestCrashLoopSequence(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	b := New(10*time.Second, 300*time.Second, clk)
	key := "pod_ns_uid_c"
	if got := b.Remaining(key, clk.Now()); got != 0 {
		t.Fatalf("unknown key remaining = %v, want 0", got)
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i, w := range want {
		finished := clk.Now()
		b.Next(key, finished)
		if got := b.Delay(key); got != w*time.Second {
			t.Fatalf("failure %d: delay = %v, want %v", i, got, w*time.Second)
		}
		if got := b.Remaining(key, finished); got != w*time.Second {
			t.Fatalf("failure %d: remaining right after = %v, want %v", i, got, w*time.Second)
		}
		clk.Step(w * time.Second)
		if got := b.Remaining(key, finished); got != 0 {
			t.Fatalf("failure %d: remaining after waiting = %v, want 0", i, got)
		}
	}
}

func TestResetAfterQuietPeriod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	b := New(10*time.Second, 300*time.Second, clk)
	b.Next("k", clk.Now())
	clk.Step(10 * time.Second)
	b.Next("k", clk.Now())
	if b.Delay("k") != 20*time.Second {
		t.Fatalf("delay = %v, want 20s", b.Delay("k"))
	}
	// The container then runs for more than ten minutes before failing.
	clk.Step(11 * time.Minute)
	b.Next("k", clk.Now())
	if b.Delay("k") != 10*time.Second {
		t.Fatalf("delay after quiet period = %v, want reset to 10s", b.Delay("k"))
	}
}

func TestGCAndReset(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	b := New(time.Second, 10*time.Second, clk)
	b.Next("a", clk.Now())
	b.Next("b", clk.Now())
	b.Reset("a")
	if b.Delay("a") != 0 {
		t.Fatal("reset key still has a delay")
	}
	clk.Step(21 * time.Second)
	b.GC()
	if b.Delay("b") != 0 {
		t.Fatal("GC kept a key quiet for longer than 2*max")
	}
}

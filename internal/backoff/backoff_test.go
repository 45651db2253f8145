package backoff

import (
	"context"
	"runtime"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// Upstream's crash-loop sequence: 10s, 20s, 40s, 80s, 160s, then 300s.
func TestCrashLoopSequence(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	b := NewCrashLoop(clk)
	key := "pod_ns_uid_c"
	if got := Remaining(b, key, clk.Now()); got != 0 {
		t.Fatalf("unknown key remaining = %v, want 0", got)
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i, w := range want {
		finished := clk.Now()
		b.Next(key, finished)
		if got := b.Get(key); got != w*time.Second {
			t.Fatalf("failure %d: delay = %v, want %v", i, got, w*time.Second)
		}
		if got := Remaining(b, key, finished); got != w*time.Second {
			t.Fatalf("failure %d: remaining right after = %v, want %v", i, got, w*time.Second)
		}
		clk.Step(w*time.Second - time.Second)
		if got := Remaining(b, key, finished); got != time.Second {
			t.Fatalf("failure %d: remaining a second before the end = %v, want 1s", i, got)
		}
		clk.Step(time.Second)
		if got := Remaining(b, key, finished); got != 0 {
			t.Fatalf("failure %d: remaining after waiting = %v, want 0", i, got)
		}
	}
}

// A container that ran for more than ten minutes starts again at 10s; one
// that ran for less keeps doubling.
func TestCrashLoopResetAfterQuietPeriod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	b := NewCrashLoop(clk)
	b.Next("k", clk.Now())
	clk.Step(10 * time.Second)
	b.Next("k", clk.Now())
	if b.Get("k") != 20*time.Second {
		t.Fatalf("delay = %v, want 20s", b.Get("k"))
	}
	clk.Step(10 * time.Minute)
	b.Next("k", clk.Now())
	if b.Get("k") != 40*time.Second {
		t.Fatalf("delay after exactly ten quiet minutes = %v, want 40s", b.Get("k"))
	}
	clk.Step(10*time.Minute + time.Second)
	b.Next("k", clk.Now())
	if b.Get("k") != 10*time.Second {
		t.Fatalf("delay after more than ten quiet minutes = %v, want reset to 10s", b.Get("k"))
	}
}

func TestImagePullAndGC(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	b := NewImagePull(clk)
	b.Next("a", clk.Now())
	b.Next("a", clk.Now())
	b.Next("b", clk.Now())
	if b.Get("a") != 20*time.Second || b.Get("b") != 10*time.Second {
		t.Fatalf("delays a=%v b=%v, want 20s and 10s", b.Get("a"), b.Get("b"))
	}
	b.Reset("a")
	if b.Get("a") != 0 {
		t.Fatal("Reset kept the key")
	}
	clk.Step(2*ImagePullMax + time.Second)
	b.GC()
	if b.Get("b") != 0 {
		t.Fatal("GC kept a key quiet for longer than twice the maximum")
	}
}

func TestDoubling(t *testing.T) {
	b := Doubling(100*time.Millisecond, 7*time.Second)
	var got []time.Duration
	for range 9 {
		got = append(got, b.Step())
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 7000, 7000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("steps = %v, want %v ms", got, want)
		}
	}
}

func TestSleep(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	done := make(chan bool)
	go func() { done <- Sleep(context.Background(), clk, time.Second) }()
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	clk.Step(time.Second)
	if !<-done {
		t.Fatal("Sleep returned false after its delay")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, clk, time.Hour) {
		t.Fatal("Sleep returned true for an ended context")
	}
}

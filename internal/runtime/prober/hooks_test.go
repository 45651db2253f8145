package prober

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
)

func TestRunHook(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	c := &v1.Container{Name: "c"}
	cases := []struct {
		name    string
		h       *v1.LifecycleHandler
		wantErr bool
	}{
		{name: "http ok", h: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Path: "/", Port: intstr.FromInt(port)}}},
		{name: "http 500 fails", h: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Path: "/fail", Port: intstr.FromInt(port)}}, wantErr: true},
		{name: "no action", h: &v1.LifecycleHandler{}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := RunHook(context.Background(), tc.h, c, "id", "127.0.0.1", nil, clk, 2*time.Second)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RunHook error = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
	// Sleep waits on the clock.
	done := make(chan error, 1)
	go func() {
		done <- RunHook(context.Background(), &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}, c, "id", "", nil, clk, time.Minute)
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("sleep hook returned before its time")
	default:
	}
	clk.Step(5 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
